// A file-system error as the rest of a one-line message (`<path>: <this>`), for every reader and writer of the CLI and
// the data checks: users see what is wrong with the path, never a Node stack or "internal error: ELOOP".

/** Whether `e` is an error of a system call (ENOENT, ELOOP, ENOSPC, …) rather than a bug. */
export function isSystemError(e: unknown): e is NodeJS.ErrnoException {
  const err = e as NodeJS.ErrnoException | null;
  return !!err && typeof err === 'object' && typeof err.code === 'string' && typeof err.syscall === 'string';
}

export function describeFsError(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  switch (err?.code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EISDIR':
      return 'is a directory, expected a file';
    case 'ELOOP':
      return 'a loop of symbolic links (or too many links in a row)';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    case 'ENAMETOOLONG':
      return 'the path is too long';
    case 'ENOSPC':
      return 'no space left on device';
    case 'EROFS':
      return 'read-only file system';
    case 'EDQUOT':
      return 'disk quota exceeded';
    case 'EIO':
      return 'input/output error';
    case 'EMFILE':
    case 'ENFILE':
      return 'too many open files';
    default:
      return (err?.message ?? String(e)).replace(/^[A-Z]+: /, '');
  }
}
