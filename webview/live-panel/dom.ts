// Small DOM helpers shared by the live panel's modules: element builder, codicons, theme colours.

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Record<string, string>,
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K];
export function el(tag: string, attrs?: Record<string, string>, ...children: (Node | string)[]): HTMLElement;
export function el(tag: string, attrs: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

export const icon = (name: string) => el('span', { class: `codicon codicon-${name}`, 'aria-hidden': 'true' });

const PALETTE = ['blue', 'orange', 'green', 'purple', 'red', 'yellow'];

export function cssVar(name: string, fallbackVar = '--vscode-foreground'): string {
  const style = getComputedStyle(document.body);
  return style.getPropertyValue(name).trim() || style.getPropertyValue(fallbackVar).trim() || 'currentColor';
}

/** The colour of line `i` of a tab (its legend swatch, raw and smoothed curves). */
export function lineColour(i: number): string {
  return cssVar(`--vscode-charts-${PALETTE[i % PALETTE.length]}`);
}

/** `colour` at opacity `alpha` (hex or rgb() from the theme; anything else is returned as is). */
export function withAlpha(colour: string, alpha: number): string {
  const hex = /^#([0-9a-f]{3,8})$/i.exec(colour)?.[1];
  if (hex) {
    const full = hex.length <= 4 ? [...hex].map((c) => c + c).join('') : hex;
    const [r, g, b] = [0, 2, 4].map((i) => parseInt(full.slice(i, i + 2), 16));
    const a = full.length === 8 ? (parseInt(full.slice(6, 8), 16) / 255) * alpha : alpha;
    return `rgba(${r}, ${g}, ${b}, ${a.toFixed(3)})`;
  }
  const rgb = /^rgba?\(([^)]+)\)$/i.exec(colour)?.[1];
  if (rgb) {
    const [r, g, b, a = '1'] = rgb.split(/[,\s/]+/).filter(Boolean);
    return `rgba(${r}, ${g}, ${b}, ${(Number(a) * alpha).toFixed(3)})`;
  }
  return colour;
}
