/**
 * The page's script (plain ES2020, no dependencies). State: a Map of jobs by id, filled from
 * `GET /v1/jobs` and kept current by `/v1/events`. A `reset` event, or a reconnect after the
 * server restarted (its event ids start over), refetches the list. Each row remembers every
 * status it showed in `data-history`, so a test can check the order a person would have seen.
 * Written as a string because the server sends it as a file; it uses no template literals.
 */
export const PAGE_SCRIPT = String.raw`'use strict';
(function () {
  var jobs = new Map();
  var source = null;
  var lastEventId = 0;
  var reconnectDelay = 1000;
  var detailId = null;
  var $ = function (id) { return document.getElementById(id); };
  // Where the server is mounted ('' at the root; an embedder's prefix, e.g. '/forkpool').
  var BASE = document.documentElement.dataset.base || '';
  var tbody = document.querySelector('#jobs tbody');
  var RANK = { queued: 0, running: 1, ended: 2 };

  function setConnection(state, text) {
    var el = $('connection');
    el.dataset.state = state;
    el.textContent = text;
  }

  function api(method, path, body) {
    var init = { method: method, headers: { accept: 'application/json' }, credentials: 'same-origin' };
    if (body !== undefined) { init.headers['content-type'] = 'application/json'; init.body = JSON.stringify(body); }
    return fetch(BASE + path, init).then(function (response) {
      return response.text().then(function (text) {
        var data = text ? JSON.parse(text) : null;
        if (!response.ok && response.status !== 202) {
          var error = new Error((data && data.error && data.error.message) || ('HTTP ' + response.status));
          error.status = response.status;
          throw error;
        }
        return data;
      });
    });
  }

  function statusOf(job) { return job.state === 'ended' ? (job.status || 'failed') : job.state; }

  function formatElapsed(job) {
    var ms = job.startedAt ? (job.endedAt || Date.now()) - job.startedAt : 0;
    if (!job.startedAt) return '–';
    var s = Math.round(ms / 100) / 10;
    return s < 60 ? s.toFixed(1) + ' s' : Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
  }

  function upsert(job) {
    var known = jobs.get(job.id);
    jobs.set(job.id, Object.assign({}, known || {}, job));
    render(job.id);
  }

  function cell(row, index) { return row.children[index]; }

  /** Ids of the job's ancestors, nearest first (from the jobs seen so far). */
  function ancestorsOf(job) {
    var out = [];
    for (var p = job.parentJobId; p && out.indexOf(p) < 0; p = (jobs.get(p) || {}).parentJobId) out.push(p);
    return out;
  }

  /** A top-level job goes last; a nested one right after its parent's last descendant. */
  function placeRow(row, job) {
    var parentRow = job.parentJobId ? document.getElementById('job-' + job.parentJobId) : null;
    if (!parentRow) return tbody.appendChild(row);
    var after = parentRow;
    while (after.nextElementSibling && (after.nextElementSibling.dataset.ancestors || '').split(' ').indexOf(job.parentJobId) >= 0) after = after.nextElementSibling;
    after.after(row);
  }

  function render(id) {
    var job = jobs.get(id);
    var row = document.getElementById('job-' + id);
    if (!row) {
      row = document.createElement('tr');
      row.id = 'job-' + id;
      row.dataset.jobId = id;
      row.dataset.history = '';
      for (var i = 0; i < 7; i++) row.appendChild(document.createElement(i === 0 ? 'th' : 'td'));
      row.children[0].scope = 'row';
      row.children[3].className = 'num';
      row.children[5].className = 'num';
      row.children[6].className = 'actions';
      var details = document.createElement('button');
      details.type = 'button';
      details.className = 'details';
      details.textContent = 'Details';
      details.addEventListener('click', function () { openDetail(id); });
      var cancel = document.createElement('button');
      cancel.type = 'button';
      cancel.className = 'cancel';
      cancel.textContent = 'Cancel';
      cancel.addEventListener('click', function () { cancelJob(id, cancel); });
      row.children[6].append(details, cancel);
      row.dataset.ancestors = ancestorsOf(job).join(' ');
      placeRow(row, job);
    }
    var status = statusOf(job);
    var history = row.dataset.history ? row.dataset.history.split(' ') : [];
    if (history[history.length - 1] !== status) { history.push(status); row.dataset.history = history.join(' '); }
    row.dataset.status = status;
    // A nested job sits under its parent, indented by its depth.
    cell(row, 0).textContent = (job.depth > 1 ? '\u00a0\u00a0'.repeat(job.depth - 1) + '\u2514 ' : '') + job.label;
    cell(row, 1).textContent = job.agent || (job.role === 'user' ? 'user job' : job.role);
    var statusCell = cell(row, 2);
    statusCell.textContent = status.replace('_', ' ');
    statusCell.className = 'status status-' + status;
    cell(row, 3).textContent = formatElapsed(job);
    cell(row, 4).textContent = job.currentTool || '';
    cell(row, 5).textContent = String(job.tokens || 0);
    var cancelButton = row.querySelector('button.cancel');
    cancelButton.disabled = job.state === 'ended';
    cancelButton.setAttribute('aria-label', 'Cancel ' + job.label);
    row.querySelector('button.details').setAttribute('aria-label', 'Details of ' + job.label);
    $('empty').hidden = jobs.size > 0;
    if (detailId === id && job.state === 'ended') openDetail(id);
  }

  function renderTotals(totals) {
    if (!totals) {
      var counts = { queued: 0, running: 0, ended: 0 };
      jobs.forEach(function (job) { counts[job.state]++; });
      totals = { jobs: counts };
    }
    $('total-queued').textContent = String(totals.jobs.queued);
    $('total-running').textContent = String(totals.jobs.running);
    $('total-ended').textContent = String(totals.jobs.ended);
    if (totals.usage) $('total-tokens').textContent = String(totals.usage.totalTokens);
  }

  function refetch() {
    // Only rows known before the request can be stale: a job started while it was in flight is newer than its answer.
    var knownBefore = new Set(jobs.keys());
    return api('GET', '/v1/jobs?limit=500').then(function (page) {
      var seen = new Set();
      page.jobs.forEach(function (job) {
        seen.add(job.id);
        var known = jobs.get(job.id);
        // An answer older than the events already shown must not move a row back (running → queued).
        if (!known || (knownBefore.has(job.id) && RANK[job.state] >= RANK[known.state])) upsert(job);
      });
      knownBefore.forEach(function (id) {
        if (!seen.has(id)) { jobs.delete(id); var row = document.getElementById('job-' + id); if (row) row.remove(); }
      });
      renderTotals(page.totals);
      $('empty').hidden = jobs.size > 0;
      return page.lastEventId;
    });
  }

  function onJobEvent(event) {
    lastEventId = Number(event.lastEventId) || lastEventId;
    var data = JSON.parse(event.data);
    if (data.session) return;
    upsert(data.job);
    renderTotals(null);
    // Tokens are the server's sum (jobs the page never saw included): asked for once things settle.
    if (event.type === 'done') refreshTotals();
  }

  var totalsTimer = null;
  function refreshTotals() {
    clearTimeout(totalsTimer);
    totalsTimer = setTimeout(function () { api('GET', '/v1/jobs?limit=1').then(function (page) { renderTotals(page.totals); }).catch(function () {}); }, 200);
  }

  function onProgress(event) {
    lastEventId = Number(event.lastEventId) || lastEventId;
    var data = JSON.parse(event.data);
    if (data.session) return;
    var job = jobs.get(data.jobId);
    if (!job) return;
    job.currentTool = data.currentTool;
    job.tokens = data.tokens;
    render(data.jobId);
  }

  function connect() {
    if (source) source.close();
    setConnection('connecting', 'connecting…');
    // A fresh connection asks from the last event this page saw; the browser's own reconnects send Last-Event-ID.
    source = new EventSource(BASE + '/v1/events' + (lastEventId ? '?lastEventId=' + lastEventId : ''));
    source.addEventListener('open', function () {
      reconnectDelay = 1000;
      // Live once the page shows what the server holds: at first that takes the list.
      if (lastEventId) { setConnection('live', 'live'); return; }
      refetch().then(function (id) { if (id > lastEventId) lastEventId = id; setConnection('live', 'live'); }).catch(showError);
    });
    ['spawned', 'started', 'done', 'requeued'].forEach(function (type) { source.addEventListener(type, onJobEvent); });
    source.addEventListener('progress', onProgress);
    source.addEventListener('reset', function (event) {
      lastEventId = Number(event.lastEventId) || 0;
      refetch().catch(showError);
    });
    source.addEventListener('error', function () {
      setConnection('offline', 'reconnecting…');
      // The browser retries by itself unless the server refused the stream (a restart with a new token, a 5xx): then we do.
      if (source.readyState === EventSource.CLOSED) {
        setTimeout(connect, reconnectDelay);
        reconnectDelay = Math.min(reconnectDelay * 2, 15000);
      }
    });
  }

  function showError(error) { $('form-message').textContent = error.message; }

  function cancelJob(id, button) {
    button.disabled = true;
    api('DELETE', '/v1/jobs/' + encodeURIComponent(id)).catch(function (error) { button.disabled = false; showError(error); });
  }

  function fact(list, name, value) {
    var dt = document.createElement('dt'); dt.textContent = name;
    var dd = document.createElement('dd'); dd.textContent = value;
    list.append(dt, dd);
  }

  // A job's transcript (GET /v1/jobs/{id}/transcript): one collapsible <details> per step. Its
  // text came from a model or a tool: it goes in as DOM text (textContent), never as markup.
  function seconds(ms) { return ms === undefined ? '' : ' ' + (ms / 1000).toFixed(1) + ' s'; }
  function callText(call) { return call.name + ' ' + call.args; }
  function stepSummary(step) {
    if (step.kind === 'model') {
      var calls = step.calls.map(callText).join(', ');
      return '#' + step.n + ' model' + seconds(step.ms) + ' ' + (step.promptTokens + step.completionTokens) + ' tok' + (calls ? ' → ' + calls : (step.text !== undefined ? ' (answer)' : ''));
    }
    if (step.kind === 'tool') return '#' + step.n + ' tool ' + step.name + seconds(step.ms) + (step.ok ? '' : ' failed') + ': ' + step.chars + ' chars';
    return '#' + step.n + ' note: ' + step.text;
  }
  function stepBody(step) {
    if (step.kind === 'model') return [step.text || ''].concat(step.calls.map(callText)).filter(Boolean).join('\n');
    return step.kind === 'tool' ? step.output : step.text;
  }
  function loadTranscript(id) {
    api('GET', '/v1/jobs/' + encodeURIComponent(id) + '/transcript?limit=200').then(function (page) {
      if (detailId !== id) return;
      var list = $('detail-transcript');
      list.textContent = '';
      $('detail-transcript-summary').textContent = page.total === 0
        ? (page.dropped ? 'Dropped with its result by retention.' : 'No steps yet.')
        : page.total + ' step(s)' + (page.omitted ? ', ' + page.omitted + ' left out by the cap' : '') + (page.next !== null ? '; the first ' + page.steps.length + ' shown' : '');
      page.steps.forEach(function (step) {
        var details = document.createElement('details');
        details.className = 'step step-' + step.kind;
        details.dataset.step = String(step.n);
        var summary = document.createElement('summary');
        summary.textContent = stepSummary(step);
        var body = document.createElement('pre');
        body.textContent = stepBody(step);
        details.append(summary, body);
        var item = document.createElement('li');
        item.append(details);
        list.append(item);
      });
    }).catch(showError);
  }

  function openDetail(id) {
    detailId = id;
    api('GET', '/v1/jobs/' + encodeURIComponent(id)).then(function (job) {
      var panel = $('detail');
      var wasHidden = panel.hidden;
      panel.hidden = false;
      $('detail-title').textContent = 'Job ' + job.label + ' (' + job.id + ')';
      var facts = $('detail-facts');
      facts.textContent = '';
      fact(facts, 'status', statusOf(job));
      fact(facts, 'elapsed', formatElapsed(job));
      fact(facts, 'iterations', String(job.iterations));
      fact(facts, 'tool calls', job.progress ? String(job.progress.toolCalls) : '–');
      fact(facts, 'tokens', String(job.tokens));
      if (job.error) fact(facts, 'error', job.error.code + ': ' + job.error.message);
      $('detail-task').textContent = job.task;
      $('detail-result').textContent = job.resultText !== null ? job.resultText : (job.state === 'ended' ? '(no result kept)' : '(still ' + job.state + ')');
      if (wasHidden) $('detail-title').focus();
      loadTranscript(id);
    }).catch(showError);
  }

  $('detail-close').addEventListener('click', function () { detailId = null; $('detail').hidden = true; });

  $('start-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var task = $('task').value.trim();
    var label = $('label').value.trim();
    if (!task) { showError(new Error('a task is needed')); return; }
    var body = label ? { task: task, label: label } : { task: task };
    $('form-message').textContent = '';
    api('POST', '/v1/jobs', body).then(function (result) {
      result.jobs.forEach(function (job) { if (!jobs.has(job.id)) upsert(Object.assign({ role: 'user', tokens: 0, iterations: 0 }, job)); });
      $('task').value = '';
      $('label').value = '';
      $('task').focus();
    }).catch(showError);
  });

  // Elapsed times of running jobs move on their own.
  setInterval(function () { jobs.forEach(function (job, id) { if (job.state === 'running') render(id); }); }, 1000);
  connect();
})();
`;
