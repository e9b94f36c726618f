/**
 * The jobs page's detail panel (part of the page's script, script.ts, which sets it into its own
 * scope): one job's facts, the approvals it waits for (Allow and Deny buttons) and those it was
 * given, and its transcript, one collapsible step each. It owns which job it shows; the page
 * opens it (a row's Details) and tells it when a job changed (`update`: refetched only when it is
 * the one shown). Plain ES2020 in a string, no template literals, like script.ts.
 */
export const DETAIL_PANEL_SCRIPT = String.raw`
  // --- The detail panel ---
  /**
   * What the panel takes of the page (uses): api(method, path, body), jobPath(ref), refOf,
   * statusOf, waitsFor, formatElapsed and showError. Returns { open(ref), update(ref) }.
   */
  function detailPanel(uses) {
    var api = uses.api, path = uses.jobPath, refOf = uses.refOf, statusOf = uses.statusOf, waitsFor = uses.waitsFor;
    var formatElapsed = uses.formatElapsed, showError = uses.showError;
    var $ = function (id) { return document.getElementById(id); };
    var detailId = null;  // ref of the job shown, or null when the panel is closed

    function answerApproval(ref, pending, decision, b) {
      b.disabled = true;
      api('POST', path(ref) + '/approvals/' + encodeURIComponent(pending.callId), { decision: decision }).catch(function (error) { b.disabled = false; showError(error); });
    }

    function approvalFacts(facts, job) {
      var ref = refOf(job.session, job.id);
      waitsFor(job).forEach(function (pending) {
        fact(facts, 'waits for', pending.tool + ': ' + pending.summary + ' ');
        var dd = facts.lastChild;
        ['allow', 'deny'].forEach(function (decision) {
          var b = document.createElement('button');
          b.type = 'button';
          b.className = 'approval-' + decision;
          b.textContent = decision === 'allow' ? 'Allow' : 'Deny';
          b.setAttribute('aria-label', b.textContent + ' ' + pending.tool + ' for ' + job.label);
          b.addEventListener('click', function () { answerApproval(ref, pending, decision, b); });
          dd.append(b);
        });
      });
      (job.approvals || []).forEach(function (a) { fact(facts, 'approval', a.tool + ' ' + a.decision + ' by ' + a.by + (a.reason ? ': ' + a.reason : '')); });
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
      api('GET', path(id)).then(function (job) {
        var panel = $('detail');
        var wasHidden = panel.hidden;
        panel.hidden = false;
        $('detail-title').textContent = 'Job ' + job.label + ' (' + refOf(job.session, job.id) + ')';
        var facts = $('detail-facts');
        facts.textContent = '';
        fact(facts, 'status', statusOf(job));
        fact(facts, 'elapsed', formatElapsed(job));
        fact(facts, 'iterations', String(job.iterations));
        fact(facts, 'tool calls', job.toolCalls === null ? '–' : String(job.toolCalls));
        fact(facts, 'tokens', String(job.tokens));
        if (job.tools) fact(facts, 'tools', job.tools.length > 0 ? job.tools.join(', ') : '(none)');
        if (job.error) fact(facts, 'error', job.error.code + ': ' + job.error.message);
        approvalFacts(facts, job);
        if (job.sleepingUntil) fact(facts, 'asleep until', new Date(job.sleepingUntil).toISOString() + (job.sleepReason ? ': ' + job.sleepReason : ''));
        $('detail-task').textContent = job.task;
        $('detail-result').textContent = job.resultText !== null ? job.resultText : (job.state === 'ended' ? '(no result kept)' : '(still ' + job.state + ')');
        if (wasHidden) $('detail-title').focus();
        loadTranscript(id);
      }).catch(showError);
    }

    $('detail-close').addEventListener('click', function () { detailId = null; $('detail').hidden = true; });

    return {
      open: openDetail,
      /** Fetches the panel again when it shows this job (its approval or its ending changed it). */
      update: function (ref) { if (detailId === ref) openDetail(ref); },
    };
  }
`;
