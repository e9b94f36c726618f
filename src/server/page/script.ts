import { DETAIL_PANEL_SCRIPT } from './detail-script.js';

/**
 * The page's script (plain ES2020, no dependencies). The server filters, sorts and pages
 * (`GET /v1/jobs`): the page holds one page of rows and the server's exact totals. Events from
 * `/v1/events` update a shown row at once and ask for the page again (at most every 250 ms),
 * so counts and new jobs show without fetching every row. A `reset` event, or a reconnect
 * after the server restarted (its event ids start over), refetches. A row is named by its
 * ref (`id`, or `session/id` for a session's job). Each row remembers every status it showed
 * in `data-history`, so a test can check the order a person would have seen. Written as a
 * string because the server sends it as a file; it uses no template literals. A job's detail
 * panel is its own part (detail-script.ts), set into this script's scope.
 */
export const PAGE_SCRIPT = String.raw`'use strict';
(function () {
  var shown = new Map();      // ref -> job, the rows of this page
  var histories = new Map();  // ref -> statuses shown, for this page's rows
  var selected = new Set();   // refs chosen for "cancel selected", across pages
  var view = { state: '', agent: '', q: '', sort: 'spawn', order: 'asc', offset: 0, limit: 50 };
  var total = 0;
  var source = null;
  var lastEventId = 0;
  var eventSeq = 0;
  var reconnectDelay = 1000;
  var $ = function (id) { return document.getElementById(id); };
  // Where the server is mounted ('' at the root; an embedder's prefix, e.g. '/forkpool').
  var BASE = document.documentElement.dataset.base || '';
  var tbody = document.querySelector('#jobs tbody');
  var STATES = ['queued', 'running', 'ended'];
  // Running jobs that hold no slot (GET /v1/jobs?waiting=).
  var WAITS = ['sleeping', 'approval'];
  var RETRYABLE = ['failed', 'cancelled', 'timed_out'];
  var MAX_CANCEL_IDS = 500;

  function setConnection(state, text) { var el = $('connection'); el.dataset.state = state; el.textContent = text; }

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

  function refOf(session, id) { return session ? session + '/' + id : id; }
  function waitsFor(job) { return job.state !== 'ended' && job.awaitingApproval ? job.awaitingApproval : []; }
  function statusOf(job) { return job.state === 'ended' ? (job.status || 'failed') : waitsFor(job).length > 0 ? 'awaiting_approval' : job.sleepingUntil ? 'sleeping' : job.state; }

  function formatElapsed(job) {
    if (!job.startedAt) return '–';
    var s = Math.round(((job.endedAt || Date.now()) - job.startedAt) / 100) / 10;
    return s < 60 ? s.toFixed(1) + ' s' : Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
  }

  function query() {
    var params = new URLSearchParams({ sort: view.sort, order: view.order, offset: String(view.offset), limit: String(view.limit) });
    if (view.state) params.set(STATES.indexOf(view.state) >= 0 ? 'state' : WAITS.indexOf(view.state) >= 0 ? 'waiting' : 'status', view.state);
    if (view.agent) params.set('agent', view.agent);
    if (view.q) params.set('q', view.q);
    return params.toString();
  }

  // --- The page of rows, from the server ---
  var inFlight = false, again = false, refreshTimer = null;
  /** Fetches the page the view asks for; one request at a time, a second ask runs after it. */
  function refresh() {
    if (inFlight) { again = true; return Promise.resolve(lastEventId); }
    inFlight = true;
    var askedAt = eventSeq;
    return api('GET', '/v1/jobs?' + query()).then(function (page) {
      inFlight = false;
      // The page ran past the end (jobs cancelled, a filter narrowed it): show the last one.
      if (page.jobs.length === 0 && page.total > 0 && view.offset > 0) { view.offset = lastOffset(page.total); return refresh(); }
      show(page, askedAt);
      if (again) { again = false; scheduleRefresh(); }
      return page.lastEventId;
    }, function (error) { inFlight = false; throw error; });
  }

  function scheduleRefresh() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(function () { refreshTimer = null; refresh().catch(showListError); }, 250);
  }

  function lastOffset(count) { return Math.max(0, Math.floor((count - 1) / view.limit) * view.limit); }

  function show(page, askedAt) {
    var next = new Map();
    page.jobs.forEach(function (job) {
      var ref = refOf(job.session, job.id);
      var known = shown.get(ref);
      // An event newer than this answer has moved the row on: the answer must not move it back.
      if (known && known.seq > askedAt) next.set(ref, known);
      else next.set(ref, Object.assign(job, { seq: known ? known.seq : 0 }));
    });
    shown.forEach(function (_job, ref) {
      if (next.has(ref)) return;
      var row = rowOf(ref);
      if (row) row.remove();
      histories.delete(ref);
    });
    shown = next;
    shown.forEach(function (_job, ref) { tbody.appendChild(render(ref)); });
    total = page.total;
    renderTotals(page.totals);
    renderPager();
  }

  function rowOf(ref) { return document.getElementById('job-' + ref); }

  function button(className, text, onClick) {
    var b = document.createElement('button');
    b.type = 'button'; b.className = className; b.textContent = text;
    b.addEventListener('click', onClick);
    return b;
  }

  function render(ref) {
    var job = shown.get(ref);
    var row = rowOf(ref);
    if (!row) {
      row = document.createElement('tr');
      row.id = 'job-' + ref;
      row.dataset.jobId = ref;
      var names = ['select', 'label', 'id', 'agent', 'status', 'elapsed num', 'tool', 'tool-calls num', 'tokens num', 'actions'];
      names.forEach(function (name, i) { var c = document.createElement(i === 1 ? 'th' : 'td'); c.className = name; row.appendChild(c); });
      row.children[1].scope = 'row';
      var box = document.createElement('input');
      box.type = 'checkbox';
      box.addEventListener('change', function () { choose(ref, box.checked); });
      row.children[0].appendChild(box);
      row.children[9].append(
        button('details', 'Details', function () { detail.open(ref); }),
        button('cancel', 'Cancel', function (event) { cancelJob(ref, event.target); }),
        button('retry', 'Retry', function (event) { retryJob(ref, event.target); }),
      );
    }
    var status = statusOf(job);
    var was = row.dataset.status;
    var history = histories.get(ref) || [];
    if (history[history.length - 1] !== status) history.push(status);
    histories.set(ref, history);
    row.dataset.history = history.join(' ');
    row.dataset.status = status;
    row.dataset.session = job.session || '';
    row.dataset.ancestors = ancestorsOf(job).join(' ');
    // A nested job sits under its parent (the server's spawn order puts it there), indented by its depth.
    row.children[1].textContent = (job.depth > 1 ? '\u00a0\u00a0'.repeat(job.depth - 1) + '\u2514 ' : '') + job.label;
    // The id the CLI, the API and the ledger name the job by (a session's job: session/id).
    row.children[2].textContent = ref;
    row.children[3].textContent = job.agent || (job.role === 'user' ? 'user job' : job.role) + (job.session ? ' (' + job.session + ')' : '');
    row.children[4].textContent = status.replace('_', ' ');
    row.children[4].className = 'status status-' + status;
    row.children[5].textContent = formatElapsed(job);
    // A job that waits for an approval shows the call it waits to make (its summary on hover).
    var asks = waitsFor(job)[0];
    // A job whose model call waits to try again shows which try of how many and why (\u21bb 2/4 429), until the answer comes.
    var retry = job.state === 'running' ? job.retrying : null;
    // A sleeping job (scheduler sleep) shows when it wakes (its reason on hover).
    var wakes = status === 'sleeping' ? new Date(job.sleepingUntil).toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '';
    row.children[6].textContent = asks ? '\u23f8 ' + asks.tool : wakes ? '\u263e ' + wakes : retry ? retryText(retry) : job.currentTool || '';
    row.children[6].title = asks ? asks.tool + ': ' + asks.summary : wakes ? 'wakes ' + wakes + ': ' + (job.sleepReason || '') : retry ? 'retrying ' + (retry.host || 'the model endpoint') + ' after ' + (retry.waitMs / 1000).toFixed(1) + ' s' : '';
    row.children[7].textContent = job.toolCalls === null || job.toolCalls === undefined ? '–' : String(job.toolCalls);
    row.children[8].textContent = String(job.tokens || 0);
    var box = row.children[0].firstChild;
    box.checked = selected.has(ref);
    box.disabled = job.state === 'ended';
    box.setAttribute('aria-label', 'Select ' + job.label);
    row.classList.toggle('selected', box.checked);
    var cancel = row.querySelector('button.cancel');
    cancel.disabled = job.state === 'ended';
    cancel.setAttribute('aria-label', 'Cancel ' + job.label);
    var retry = row.querySelector('button.retry');
    retry.hidden = RETRYABLE.indexOf(status) < 0;
    retry.setAttribute('aria-label', 'Retry ' + job.label);
    row.querySelector('button.details').setAttribute('aria-label', 'Details of ' + job.label);
    // The open detail view follows its job to the end (its result arrives then).
    if (job.state === 'ended' && was !== status) detail.update(ref);
    return row;
  }

  /** Ids of the job's ancestors on this page, nearest first. */
  function ancestorsOf(job) {
    var out = [];
    for (var p = job.parentJobId; p && out.indexOf(p) < 0; p = (shown.get(refOf(job.session, p)) || {}).parentJobId) out.push(p);
    return out;
  }

  function renderTotals(totals) {
    $('total-queued').textContent = String(totals.jobs.queued);
    $('total-running').textContent = String(totals.jobs.running);
    $('total-ended').textContent = String(totals.jobs.ended);
    if (totals.usage) $('total-tokens').textContent = String(totals.usage.totalTokens);
    var all = totals.jobs.queued + totals.jobs.running + totals.jobs.ended;
    $('empty').textContent = all === 0 ? 'No jobs yet.' : 'No job matches.';
    $('empty').hidden = shown.size > 0;
  }

  function renderPager() {
    var first = shown.size === 0 ? 0 : view.offset + 1;
    $('page-info').textContent = first + '–' + (view.offset + shown.size) + ' of ' + total;
    $('page-first').disabled = $('page-prev').disabled = view.offset === 0;
    $('page-next').disabled = $('page-last').disabled = view.offset + view.limit >= total;
    document.querySelectorAll('#jobs thead th[data-sort]').forEach(function (th) {
      if (th.dataset.sort === view.sort) th.setAttribute('aria-sort', view.order === 'asc' ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    });
    var live = [];
    shown.forEach(function (job, ref) { if (job.state !== 'ended') live.push(ref); });
    $('select-page').checked = live.length > 0 && live.every(function (ref) { return selected.has(ref); });
    renderSelection();
  }

  function renderSelection() {
    $('cancel-selected').textContent = 'Cancel selected (' + selected.size + ')';
    $('cancel-selected').disabled = selected.size === 0;
  }

  function choose(ref, on) {
    if (on) selected.add(ref); else selected.delete(ref);
    var row = rowOf(ref);
    if (row) { row.classList.toggle('selected', on); row.children[0].firstChild.checked = on; }
    renderSelection();
  }

  function go(offset) { view.offset = Math.max(0, offset); refresh().catch(showListError); }

  // --- Events ---
  function onJobEvent(event) {
    lastEventId = Number(event.lastEventId) || lastEventId;
    var data = JSON.parse(event.data);
    var ref = refOf(data.session, data.job.id);
    if (shown.has(ref)) {
      shown.set(ref, Object.assign({}, shown.get(ref), data.job, { session: data.session, seq: ++eventSeq }));
      render(ref);
    }
    // Counts, new jobs and the order come from the server.
    scheduleRefresh();
  }

  function retryText(retry) {
    return '\u21bb ' + retry.attempt + (retry.maxRetries === null ? '' : '/' + retry.maxRetries) + (retry.status === null ? '' : ' ' + retry.status);
  }

  function onProgress(event) {
    lastEventId = Number(event.lastEventId) || lastEventId;
    var data = JSON.parse(event.data);
    var job = shown.get(refOf(data.session, data.jobId));
    if (!job || job.state === 'ended') return;
    job.currentTool = data.currentTool;
    job.retrying = data.retrying || null;
    job.tokens = data.tokens;
    if (typeof data.toolCalls === 'number') job.toolCalls = data.toolCalls;
    render(refOf(data.session, data.jobId));
  }

  // A job asks, or its question was answered: its row (and its open detail) are fetched again.
  function onApprovalEvent(event) {
    lastEventId = Number(event.lastEventId) || lastEventId;
    var data = JSON.parse(event.data);
    detail.update(refOf(data.session, data.approval.jobId));
    scheduleRefresh();
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
      refresh().then(function (id) { if (id > lastEventId) lastEventId = id; setConnection('live', 'live'); }).catch(showListError);
    });
    ['spawned', 'started', 'done', 'requeued', 'sleeping'].forEach(function (type) { source.addEventListener(type, onJobEvent); });
    ['approval-requested', 'approval-resolved'].forEach(function (type) { source.addEventListener(type, onApprovalEvent); });
    source.addEventListener('progress', onProgress);
    source.addEventListener('reset', function (event) {
      lastEventId = Number(event.lastEventId) || 0;
      refresh().catch(showListError);
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

  // --- Actions ---
  function showError(error) { $('form-message').textContent = error.message; }
  function showListError(error) { $('list-message').textContent = error.message; }
  var path = function (ref) { return '/v1/jobs/' + encodeURIComponent(ref); };
  var detail = detailPanel({ api: api, jobPath: path, refOf: refOf, statusOf: statusOf, waitsFor: waitsFor, formatElapsed: formatElapsed, showError: showError });

  function cancelJob(ref, b) {
    b.disabled = true;
    api('DELETE', path(ref)).catch(function (error) { b.disabled = false; showListError(error); });
  }

  function retryJob(ref, b) {
    b.disabled = true;
    api('POST', path(ref) + '/restart').then(function () { b.disabled = false; $('list-message').textContent = 'retrying ' + ref; scheduleRefresh(); })
      .catch(function (error) { b.disabled = false; showListError(error); });
  }

  /** POST /v1/jobs/cancel, in calls of at most MAX_CANCEL_IDS refs. */
  function cancelMany(bodies, done) {
    var counts = { cancelled: 0, ended: 0, unknown: 0 };
    return bodies.reduce(function (chain, body) {
      return chain.then(function () { return api('POST', '/v1/jobs/cancel', body); }).then(function (answer) {
        counts.cancelled += answer.cancelled.length; counts.ended += answer.ended.length; counts.unknown += answer.unknown.length;
      });
    }, Promise.resolve()).then(function () {
      $('list-message').textContent = 'cancel requested for ' + counts.cancelled + (counts.ended ? ', ' + counts.ended + ' had ended' : '') + (counts.unknown ? ', ' + counts.unknown + ' unknown' : '');
      if (done) done();
      scheduleRefresh();
    }).catch(showListError);
  }

  $('cancel-selected').addEventListener('click', function () {
    var refs = Array.from(selected), bodies = [];
    for (var i = 0; i < refs.length; i += MAX_CANCEL_IDS) bodies.push({ ids: refs.slice(i, i + MAX_CANCEL_IDS) });
    cancelMany(bodies, function () { selected.clear(); shown.forEach(function (_job, ref) { render(ref); }); renderPager(); });
  });
  $('cancel-queued').addEventListener('click', function () { cancelMany([{ state: 'queued' }]); });
  $('select-page').addEventListener('change', function (event) {
    shown.forEach(function (job, ref) { if (job.state !== 'ended') choose(ref, event.target.checked); });
  });

  $('page-first').addEventListener('click', function () { go(0); });
  $('page-prev').addEventListener('click', function () { go(view.offset - view.limit); });
  $('page-next').addEventListener('click', function () { go(view.offset + view.limit); });
  $('page-last').addEventListener('click', function () { go(lastOffset(total)); });
  $('page-size').addEventListener('change', function (event) { view.limit = Number(event.target.value); go(0); });
  document.querySelectorAll('#jobs thead th[data-sort] button').forEach(function (b) {
    b.addEventListener('click', function () {
      var sort = b.parentElement.dataset.sort;
      view.order = view.sort === sort && view.order === 'asc' ? 'desc' : 'asc';
      view.sort = sort;
      go(0);
    });
  });
  $('filters').addEventListener('submit', function (event) { event.preventDefault(); });
  $('filter-state').addEventListener('change', function (event) { view.state = event.target.value; go(0); });
  var typing = null;
  ['filter-agent', 'filter-text'].forEach(function (id) {
    $(id).addEventListener('input', function () {
      clearTimeout(typing);
      typing = setTimeout(function () { view.agent = $('filter-agent').value.trim(); view.q = $('filter-text').value.trim(); go(0); }, 300);
    });
  });

${DETAIL_PANEL_SCRIPT}
  $('start-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var task = $('task').value.trim();
    var label = $('label').value.trim();
    if (!task) { showError(new Error('a task is needed')); return; }
    var body = label ? { task: task, label: label } : { task: task };
    $('form-message').textContent = '';
    api('POST', '/v1/jobs', body).then(function (result) {
      // The row comes with the next page fetch; its history starts where the answer found it.
      result.jobs.forEach(function (job) { histories.set(job.id, [statusOf(job)]); });
      scheduleRefresh();
      $('task').value = '';
      $('label').value = '';
      $('task').focus();
    }).catch(showError);
  });

  // Elapsed times of running jobs move on their own.
  setInterval(function () { shown.forEach(function (job, ref) { if (job.state === 'running') render(ref); }); }, 1000);
  connect();
})();
`;
