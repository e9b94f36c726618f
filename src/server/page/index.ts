/**
 * The jobs page of `forkpool serve`: one HTML file, one stylesheet, one script, no framework
 * and no build step. The page is a table that changes on server events; plain DOM code does
 * that in ~400 lines, loads instantly, and keeps the package free of a front-end toolchain.
 * Served under a strict CSP (`script-src 'self'`), so the script is a file, not inline.
 */
export { PAGE_SCRIPT } from './script.js';
export { PAGE_CSS } from './style.js';

/** The page, for a server mounted at `base` (`''` at the root, `/forkpool` under a prefix). */
export function pageHtml(base: string): string {
  return PAGE_TEMPLATE.replaceAll('__BASE__', escapeAttribute(base));
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

const PAGE_TEMPLATE = `<!doctype html>
<html lang="en" data-base="__BASE__">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>forkpool jobs</title>
<link rel="stylesheet" href="__BASE__/page.css">
<script src="__BASE__/page.js" defer></script>
</head>
<body>
<header>
  <h1>forkpool</h1>
  <p id="connection" role="status" aria-live="polite" data-state="connecting">connecting…</p>
</header>
<main>
  <section aria-labelledby="totals-title">
    <h2 id="totals-title">Totals</h2>
    <dl id="totals" class="totals">
      <div><dt>queued</dt><dd id="total-queued">0</dd></div>
      <div><dt>running</dt><dd id="total-running">0</dd></div>
      <div><dt>ended</dt><dd id="total-ended">0</dd></div>
      <div><dt>tokens</dt><dd id="total-tokens">0</dd></div>
    </dl>
  </section>
  <section aria-labelledby="start-title">
    <h2 id="start-title">Start a job</h2>
    <form id="start-form">
      <label for="task">Task</label>
      <textarea id="task" name="task" rows="3" required maxlength="200000" placeholder="Where is the retry backoff implemented?"></textarea>
      <label for="label">Label <span class="hint">(optional)</span></label>
      <input id="label" name="label" maxlength="200" autocomplete="off">
      <button type="submit">Start job</button>
      <p id="form-message" role="alert" class="message"></p>
    </form>
  </section>
  <section aria-labelledby="jobs-title">
    <h2 id="jobs-title">Jobs</h2>
    <form id="filters" class="toolbar" role="search">
      <label>State <select id="filter-state">
        <option value="">all</option><option>queued</option><option>running</option><option value="sleeping">running, sleeping</option><option value="approval">running, awaiting approval</option><option>ended</option>
        <option value="ok">ended ok</option><option value="failed">ended failed</option><option value="cancelled">ended cancelled</option>
        <option value="timed_out">ended timed out</option><option value="partial">ended partial</option><option value="error">ended error</option><option value="deferred">ended deferred</option>
      </select></label>
      <label>Agent <input id="filter-agent" size="10" maxlength="64" autocomplete="off"></label>
      <label>Text <input id="filter-text" type="search" size="16" maxlength="200" autocomplete="off" placeholder="label, task or id"></label>
    </form>
    <div class="toolbar">
      <button type="button" id="cancel-selected" disabled>Cancel selected (0)</button>
      <button type="button" id="cancel-queued">Cancel all queued</button>
      <p id="list-message" role="status" aria-live="polite" class="hint"></p>
    </div>
    <nav class="toolbar pager" aria-label="Pages of jobs">
      <button type="button" id="page-first">First</button>
      <button type="button" id="page-prev">Previous</button>
      <span id="page-info" aria-live="polite">0 of 0</span>
      <button type="button" id="page-next">Next</button>
      <button type="button" id="page-last">Last</button>
      <label>Rows <select id="page-size"><option>25</option><option selected>50</option><option>100</option><option>200</option><option>500</option></select></label>
    </nav>
    <table id="jobs">
      <caption class="visually-hidden">Background jobs of the server and its sessions, one page, updated live; sort by a column's button</caption>
      <thead><tr><td><input type="checkbox" id="select-page" aria-label="Select every live job on this page"></td><th scope="col" data-sort="spawn" aria-sort="ascending"><button type="button" class="sort">Label</button></th><th scope="col">Id</th><th scope="col">Agent</th><th scope="col" data-sort="state"><button type="button" class="sort">Status</button></th><th scope="col" data-sort="duration"><button type="button" class="sort">Elapsed</button></th><th scope="col">Tool</th><th scope="col">Tool calls</th><th scope="col" data-sort="tokens"><button type="button" class="sort">Tokens</button></th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody></tbody>
    </table>
    <p id="empty" class="hint">Loading jobs…</p>
  </section>
  <section id="detail" aria-labelledby="detail-title" hidden>
    <h2 id="detail-title" tabindex="-1">Job</h2>
    <dl id="detail-facts" class="facts"></dl>
    <h3>Task</h3>
    <pre id="detail-task"></pre>
    <h3>Result</h3>
    <pre id="detail-result"></pre>
    <h3>Transcript</h3>
    <p id="detail-transcript-summary" class="hint"></p>
    <ol id="detail-transcript" class="steps"></ol>
    <button type="button" id="detail-close">Close</button>
  </section>
</main>
</body>
</html>
`;
