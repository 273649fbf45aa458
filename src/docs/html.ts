// A tiny, dependency-free HTML layer for the human pages (/docs, /errors): escaping, the
// catalogue's `code` spans, and one plain layout with no external assets.
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] as string);
}

/** Catalogue texts use Markdown backticks for code; everything else is escaped. */
export function inlineCode(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

const STYLE = `
  body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1d2330; background: #fafbfc; }
  main { max-width: 46rem; margin: 0 auto; padding: 2rem 1.25rem 4rem; }
  nav { font-size: .9rem; margin-bottom: 1.5rem; } nav a { margin-right: 1rem; }
  a { color: #0b5cad; } h1 { font-size: 1.6rem; margin: .2rem 0 1rem; }
  code, pre { font: .9em/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #eef1f5; border-radius: 4px; }
  code { padding: .1em .35em; } pre { padding: 1rem; overflow-x: auto; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: .4rem 1.2rem; } dt { font-weight: 600; } dd { margin: 0; }
  table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid #dde2ea; vertical-align: top; }
  .status { font-variant-numeric: tabular-nums; }`;

export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}
</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}
