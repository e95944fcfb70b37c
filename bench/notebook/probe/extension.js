// bench/notebook's instrument, installed next to CoA Studio in the benchmark's code-server only: it shares the
// extension host's event loop with every extension, so the gaps between its 10 ms ticks are the host's stalls
// (the longest time a command, a hover or a cell open would have waited). Writes one JSON line per 250 ms to
// $COA_PROBE_OUT: {t: epoch ms, max: longest gap in ms since the previous line}. Plain CommonJS, no dependencies.
const fs = require('node:fs');

exports.activate = function activate() {
  const out = process.env.COA_PROBE_OUT;
  if (!out) return;
  let last = performance.now();
  let windowMax = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    windowMax = Math.max(windowMax, now - last - 10);
    last = now;
  }, 10);
  const flush = setInterval(() => {
    fs.appendFileSync(out, JSON.stringify({ t: Date.now(), max: Math.round(windowMax) }) + '\n');
    windowMax = 0;
  }, 250);
  // Optional: a CPU profile of the extension host (every extension in it) from activation until the file
  // $COA_PROBE_PROFILE.stop appears, written to $COA_PROBE_PROFILE (.cpuprofile: Chrome DevTools, VS Code) — what a
  // stall is made of. bench/notebook/editor.ts --profile drives it.
  const profile = process.env.COA_PROBE_PROFILE;
  if (profile) {
    const inspector = require('node:inspector');
    const session = new inspector.Session();
    session.connect();
    session.post('Profiler.enable', () => session.post('Profiler.start'));
    const poll = setInterval(() => {
      if (!fs.existsSync(`${profile}.stop`)) return;
      clearInterval(poll);
      session.post('Profiler.stop', (err, res) => {
        fs.writeFileSync(profile, err ? JSON.stringify({ error: String(err) }) : JSON.stringify(res.profile));
        session.disconnect();
      });
    }, 250);
  }
  exports.deactivate = () => {
    clearInterval(tick);
    clearInterval(flush);
  };
};
