// The GitOps Service panel of the Argo CD UI, for each Application the sidecar
// made:
//  - a "GitOps Service" tab on the Application: for a SnapshotEnvironmentBinding's
//    Application the promotion path (every Environment with the Snapshot it runs,
//    per-component image and sync/health, images that differ from the parent
//    Environment) and the last PromotionRun with its steps; for a
//    GitOpsDeployment's Application its type, source, destination, sync/health,
//    conditions and SyncRuns;
//  - an item in the Application's status panel with the environment and Snapshot;
//  - Sync (a GitOpsDeploymentSyncRun) and Promote (a PromotionRun to a chosen
//    Environment), which the proxy does only for a user the tenant mapping
//    names; the panel shows the run live until done, or why it was refused;
//    Preview before Promote (a PromotionPreview: what would change there, the
//    dry-run's errors and the diff), or of every Environment of the path at once
//    (a release preview, each component with its render hash).
// argocd-server serves this file from /tmp/extensions/<folder>/ and proxies the
// panel's request to the sidecar's ui-proxy (extension "gitops-service" in
// argocd-cm's extension.config) after checking that the user may get this
// Application; the proxy answers only from the Application's own tenant
// namespace. Plain JavaScript (no JSX, no build step) on the React that Argo CD's
// UI provides (React 16 in 2.x, React 19 in 3.x: only createElement, function
// components and hooks, nothing either removed).
((window) => {
  const React = window.React;
  const h = React.createElement;
  // Relative to the UI's base path (<base href>, "/" or argocd-server's
  // --rootpath/--basehref), so the panel works wherever Argo CD is served.
  const API = (() => {
    const base = document.querySelector('head > base');
    const href = (base && base.getAttribute('href')) || '/';
    return href.replace(/\/*$/, '/') + 'extensions/gitops-service/api/v1/';
  })();
  // How often an open panel refreshes: a promotion in flight moves on its own;
  // faster while an action started here runs.
  const REFRESH_MS = 5000;
  const FAST_MS = 1000;

  const ours = (app) => ((app && app.metadata && app.metadata.labels) || {})['app.kubernetes.io/managed-by'] === 'gitops-service';

  // useDeployment loads (and keeps refreshing) the GitOps Service object behind
  // app; every second while fast (an action of the panel in flight).
  function useDeployment(app, fast) {
    const [state, setState] = React.useState({data: null, error: null});
    const name = app.metadata.namespace + ':' + app.metadata.name;
    const project = app.spec.project;
    React.useEffect(() => {
      let live = true;
      const load = () =>
        call(app, 'GET', 'deployment')
          .then(({ok, status, body}) => {
            if (!live) return;
            setState(ok ? {data: body, error: null} : {data: null, error: {status, message: body.error || body.message || 'HTTP ' + status}});
          })
          .catch((e) => live && setState((s) => ({data: s.data, error: {status: 0, message: String(e)}})));
      load();
      const timer = setInterval(load, fast ? FAST_MS : REFRESH_MS);
      return () => {
        live = false;
        clearInterval(timer);
      };
    }, [name, project, fast]);
    return state;
  }

  // call asks the proxy extension about app (argocd-server checks the user may
  // get it and adds who they are); the answer's JSON, or its text as an error.
  function call(app, method, path, body) {
    const headers = {'Argocd-Application-Name': app.metadata.namespace + ':' + app.metadata.name, 'Argocd-Project-Name': app.spec.project};
    if (body) headers['Content-Type'] = 'application/json';
    return fetch(API + path, {method, headers, body: body ? JSON.stringify(body) : undefined}).then((r) =>
      r.text().then((text) => {
        let parsed = {};
        try {
          parsed = JSON.parse(text);
        } catch (e) {
          parsed = {error: text.trim() || r.statusText};
        }
        return {ok: r.ok, status: r.status, body: parsed};
      }));
  }

  // --- small building blocks -------------------------------------------------

  const COLORS = {Synced: '#18be94', Healthy: '#18be94', success: '#18be94', Success: '#18be94', Succeeded: '#18be94',
    OutOfSync: '#f4c030', Progressing: '#0dadea', 'in-progress': '#0dadea', Running: '#0dadea', Active: '#0dadea', Waiting: '#ccd6dd',
    Degraded: '#e96d76', Missing: '#f4c030', failure: '#e96d76', Failure: '#e96d76', Failed: '#e96d76', Error: '#e96d76', Unknown: '#ccd6dd'};
  const badge = (text, testid) =>
    text ? h('span', {className: 'gs-badge', 'data-gs': testid, style: {display: 'inline-block', padding: '0 6px', marginRight: 4, borderRadius: 3,
      color: '#fff', background: COLORS[text] || '#8fa4b1', fontSize: '0.85em', lineHeight: '1.6em'}}, text) : null;
  const label = (text) => h('div', {style: {textTransform: 'uppercase', fontSize: '0.8em', color: '#6d7f8b', marginTop: '0.8em'}}, text);
  const mono = (text) => h('code', {style: {fontSize: '0.9em', wordBreak: 'break-all'}}, text);
  const box = (props, ...children) => h('div', Object.assign({className: 'white-box', style: {padding: '1em', marginBottom: '1em'}}, props), ...children);
  const short = (sha) => (sha || '').slice(0, 7);

  const table = (testid, head, rows) =>
    h('table', {'data-gs': testid, style: {width: '100%', borderCollapse: 'collapse', marginTop: '0.4em'}},
      h('thead', null, h('tr', null, head.map((c) => h('th', {key: c, style: {textAlign: 'left', padding: '2px 8px 2px 0', color: '#6d7f8b'}}, c)))),
      h('tbody', null, rows));
  const td = (content, key) => h('td', {key, style: {padding: '2px 8px 2px 0', verticalAlign: 'top'}}, content);

  // A condition is an error a person must act on when it says so: an error
  // condition (ErrorOccurred, InvalidSpecError...) True, or a condition about
  // something working (AllComponentsDeployed, ConnectionInitializationSucceeded...)
  // False; a "...Resolved" reason says the error is over.
  const isError = (c) => !/Resolved$/.test(c.reason || '') &&
    (/Error|Occurred$/.test(c.type) ? c.status === 'True' : c.status === 'False');

  function Conditions({conditions, fix}) {
    const list = conditions || [];
    if (!list.length) return null;
    const errors = list.filter(isError);
    return h('div', {'data-gs': 'conditions'},
      errors.map((c) =>
        h('div', {key: 'e-' + c.type, 'data-gs': 'error', className: 'gs-error',
          style: {borderLeft: '4px solid #e96d76', background: '#fdf0f1', padding: '0.6em 1em', margin: '0.6em 0'}},
          h('b', null, c.type + (c.reason ? ' (' + c.reason + ')' : '')), ': ', c.message || 'no message',
          fix ? h('div', {style: {fontSize: '0.9em', color: '#6d7f8b', marginTop: '0.3em'}}, 'To fix: ', fix) : null)),
      table('condition-table', ['Condition', 'Status', 'Reason', 'Message'],
        list.map((c) => h('tr', {key: c.type}, td(c.type, 1), td(c.status, 2), td(c.reason, 3), td(c.message, 4)))));
  }

  const describe = (d, kind) => h('span', null, 'check ', mono('kubectl -n ' + d.namespace + ' describe ' + kind + ' ' + d.name));

  // --- actions: Sync and Promote ---------------------------------------------
  // The proxy creates the run only for a user the tenant mapping names and
  // otherwise says why; the panel shows that, or the run until it is done.

  // runOf is the run an action started as the latest data shows it.
  function runOf(data, action) {
    if (!data || !action || !action.name) return null;
    const list = action.kind === 'PromotionRun' ? data.promotionRuns || [] : data.syncRuns || [];
    return list.filter((r) => r.name === action.name)[0] || null;
  }
  // Approve, Freeze and Unfreeze make no run: they are done when the proxy answers.
  const isRun = (kind) => kind === 'PromotionRun' || kind === 'GitOpsDeploymentSyncRun';
  const runDone = (action, run) => !isRun(action.kind) || (!!run && (action.kind === 'PromotionRun' ? run.state === 'Completed'
    : ['Succeeded', 'Failed', 'Error'].indexOf(run.phase) >= 0 || !!run.message));

  function ActionStatus({action, run}) {
    if (!action) return null;
    if (action.pending) {
      return h('div', {'data-gs': 'action-pending', style: {marginTop: '0.6em'}}, h('i', {className: 'fa fa-circle-notch fa-spin', style: {marginRight: 6}}), action.what + '…');
    }
    if (action.error) {
      return h('div', {'data-gs': 'action-error', style: {borderLeft: '4px solid #e96d76', background: '#fdf0f1', padding: '0.6em 1em', marginTop: '0.6em'}},
        h('b', null, action.what + ' refused: '), action.error);
    }
    if (!isRun(action.kind)) {
      return h('div', {'data-gs': 'action', 'data-gs-done': 'true', style: {marginTop: '0.6em'}}, action.what + ' done: ', action.kind + ' ', mono(action.name));
    }
    const done = runDone(action, run);
    const state = !run ? 'Waiting' : action.kind === 'PromotionRun' ? run.state || 'Waiting' : run.phase || 'Waiting';
    return h('div', {'data-gs': 'action', 'data-gs-done': done ? 'true' : 'false', style: {marginTop: '0.6em'}},
      action.kind + ' ', mono(action.name), ' ', badge(state, 'action-state'), run && run.result ? badge(run.result, 'action-result') : null,
      run && run.message ? h('span', {style: {color: '#e96d76'}}, run.message) : null,
      done ? null : h('i', {className: 'fa fa-circle-notch fa-spin', style: {marginLeft: 6}}));
  }

  const button = (testid, icon, text, onClick, disabled) =>
    h('button', {className: 'argo-button argo-button--base', 'data-gs': testid, disabled, onClick, style: {marginRight: 8}},
      h('i', {className: 'fa ' + icon, style: {marginRight: 4}}), text);

  function SyncAction({act, action, run}) {
    const busy = !!action && (action.pending || (!action.error && !runDone(action, run)));
    return h('div', {'data-gs': 'sync-action', style: {marginTop: '0.8em'}},
      button('sync-button', 'fa-sync', 'Sync', () => act('Sync', 'sync'), busy),
      h('span', {style: {color: '#6d7f8b'}}, 'creates a GitOpsDeploymentSyncRun for this deployment'),
      h(ActionStatus, {action, run}));
  }

  // --- Preview: what promoting would change, before Promote ------------------
  // The proxy creates a PromotionPreview (same checks as Promote) and serves
  // its result: per component what would be added, changed, removed, the
  // target cluster's dry-run errors, and the unified diff (Secrets redacted).

  const DIFF_COLORS = {'-': '#c0392b', '+': '#18be94', '@': '#0dadea'};
  function DiffView({text}) {
    const lines = (text || '').split('\n');
    return h('pre', {'data-gs': 'preview-diff', style: {maxHeight: '40em', overflow: 'auto', background: '#f8fbfb', padding: '0.6em', fontSize: '0.85em'}},
      lines.map((l, i) => {
        const head = l.startsWith('---') || l.startsWith('+++');
        const color = head ? null : DIFF_COLORS[l[0]];
        return h('div', {key: i, style: {color: color || undefined, fontWeight: head ? 'bold' : undefined, whiteSpace: 'pre'}}, l || ' ');
      }));
  }

  const previewFailed = (p) => (p.conditions || []).filter((c) => c.type === 'PreviewFailed' && c.status === 'True')[0];

  function PreviewResult({preview}) {
    if (preview.error) {
      return h('div', {'data-gs': 'preview-error', style: {borderLeft: '4px solid #e96d76', background: '#fdf0f1', padding: '0.6em 1em', marginTop: '0.6em'}},
        h('b', null, 'Preview refused: '), preview.error);
    }
    const p = preview.data;
    if (!p || (!p.completed && !previewFailed(p))) {
      return h('div', {'data-gs': 'preview-pending', style: {marginTop: '0.6em'}},
        h('i', {className: 'fa fa-circle-notch fa-spin', style: {marginRight: 6}}), 'Previewing ', preview.name ? mono(preview.name) : null, '…');
    }
    const failed = previewFailed(p);
    if (failed) {
      return h('div', {'data-gs': 'preview-error', style: {borderLeft: '4px solid #e96d76', background: '#fdf0f1', padding: '0.6em 1em', marginTop: '0.6em'}},
        h('b', null, 'Preview failed (' + failed.reason + '): '), failed.message);
    }
    if (p.allEnvironments) {
      // A release preview: each Environment of the path, its components
      // with their render hashes (what a promotion must still render).
      return h('div', {'data-gs': 'preview', 'data-gs-clean': p.clean ? 'true' : 'false', style: {marginTop: '0.6em'}},
        'PromotionPreview ', mono(p.name), ' of every Environment ', badge(p.clean ? 'Succeeded' : 'Failed', 'preview-state'),
        (p.environments || []).map((e) => h('div', {key: e.name, 'data-gs': 'preview-environment', 'data-gs-environment': e.name, style: {marginTop: '0.8em'}},
          h('b', null, 'Environment ', mono(e.name)), ' ', badge(e.error ? 'Not previewed' : e.clean ? 'Succeeded' : 'Failed', 'preview-environment-state'),
          e.error ? h('div', {style: {color: '#c0392b'}}, e.error) : null,
          table('preview-hashes', ['Component', 'Render hash'],
            (e.components || []).map((c) => h('tr', {key: c.name}, td(c.name, 1), td(mono(c.renderHash || '-'), 2)))),
          e.error ? null : h(PreviewComponents, {comps: e.components || [], diff: e.diff, truncated: e.diffTruncated}))));
    }
    return h('div', {'data-gs': 'preview', 'data-gs-clean': p.clean ? 'true' : 'false', style: {marginTop: '0.6em'}},
      'PromotionPreview ', mono(p.name), ' ', badge(p.clean ? 'Succeeded' : 'Failed', 'preview-state'),
      h(PreviewComponents, {comps: p.components || [], diff: p.diff, truncated: p.truncated}));
  }

  // PreviewComponents is one Environment's result: per component what
  // would change, the dry-run's errors and the diff.
  function PreviewComponents({comps, diff, truncated}) {
    const errors = [];
    comps.forEach((c) => {
      if (c.renderError) errors.push(h('div', {key: c.name + '-render'}, h('b', null, c.name), ': not rendered: ', c.renderError));
      (c.dryRunErrors || []).forEach((e, i) =>
        errors.push(h('div', {key: c.name + '-' + i}, h('b', null, c.name), ': dry-run refused ', mono(e.kind + ' ' + (e.namespace ? e.namespace + '/' : '') + e.name), ': ', e.message)));
    });
    return h('div', null,
      table('preview-components', ['Component', 'Added', 'Changed', 'Removed', 'Unchanged', 'Errors'],
        comps.map((c) => h('tr', {key: c.name}, td(c.name, 1), td(c.added, 2), td(c.changed, 3), td(c.removed, 4), td(c.unchanged, 5), td(c.errors, 6)))),
      errors.length ? h('div', {'data-gs': 'preview-dryrun-errors', style: {borderLeft: '4px solid #e96d76', background: '#fdf0f1', padding: '0.6em 1em', margin: '0.6em 0'}}, errors) : null,
      diff ? h(DiffView, {text: diff}) : h('div', {style: {color: '#6d7f8b'}}, 'Nothing would change.'),
      truncated ? h('div', {style: {color: '#6d7f8b'}}, 'The diff is cut: the sidecar that ran the preview no longer has all of it; run the preview again.') : null);
  }

  const ALL_ENVIRONMENTS = '*';

  // usePreview starts a preview to env and follows it until it completes.
  function usePreview(application) {
    const [preview, setPreview] = React.useState(null);
    React.useEffect(() => {
      if (!preview || !preview.name || preview.error || (preview.data && (preview.data.completed || previewFailed(preview.data)))) return undefined;
      let live = true;
      const timer = setInterval(() => {
        call(application, 'GET', 'preview?name=' + encodeURIComponent(preview.name)).then(({ok, status, body}) => {
          if (!live) return;
          setPreview((p) => Object.assign({}, p, ok ? {data: body} : {error: body.error || 'HTTP ' + status}));
        }).catch((e) => live && setPreview((p) => Object.assign({}, p, {error: String(e)})));
      }, FAST_MS);
      return () => {
        live = false;
        clearInterval(timer);
      };
    }, [preview && preview.name, preview && preview.data, preview && preview.error]);
    // ALL_ENVIRONMENTS previews every Environment of the path at once.
    const start = (environment) => {
      setPreview({environment});
      call(application, 'POST', 'preview', environment === ALL_ENVIRONMENTS ? {allEnvironments: true} : {environment})
        .then(({ok, status, body}) => setPreview(ok ? {environment, name: body.name} : {environment, error: body.error || 'HTTP ' + status}))
        .catch((e) => setPreview({environment, error: String(e)}));
    };
    return [preview, start];
  }

  function PromoteAction({d, act, action, run, application}) {
    const [preview, startPreview] = usePreview(application);
    const [target, setTarget] = React.useState('');
    const envs = (d.path || []).filter((e) => !e.current);
    // The next Environment after this one, else the first other one.
    const next = envs.filter((e) => e.parent === d.environment)[0] || envs[0];
    const chosen = target || (next ? next.name : '');
    const busy = !!action && (action.pending || (!action.error && !runDone(action, run)));
    if (!envs.length) return null;
    const previewing = !!preview && !preview.error && !(preview.data && (preview.data.completed || previewFailed(preview.data)));
    return h('div', {'data-gs': 'promote-action', style: {marginTop: '0.8em'}},
      button('preview-button', 'fa-eye', 'Preview', () => startPreview(chosen), previewing || !chosen),
      button('preview-all-button', 'fa-layer-group', 'Preview all Environments', () => startPreview(ALL_ENVIRONMENTS), previewing),
      button('promote-button', 'fa-arrow-right', 'Promote', () => act('Promote', 'promote', {environment: chosen}), busy || !chosen),
      'Snapshot ', mono(d.snapshot), ' to ',
      h('select', {'data-gs': 'promote-target', value: chosen, onChange: (e) => setTarget(e.target.value), style: {marginLeft: 4, width: 'auto', display: 'inline-block'}},
        envs.map((e) => h('option', {key: e.name, value: e.name}, e.displayName ? e.displayName + ' (' + e.name + ')' : e.name))),
      preview && (preview.environment === chosen || preview.environment === ALL_ENVIRONMENTS) ? h(PreviewResult, {preview}) : null,
      h(ActionStatus, {action, run}));
  }

  // Rollback rolls this binding's Environment back to the last Snapshot
  // verified there; the proxy authorizes it as Promote.
  function RollbackAction({d, act, action, run}) {
    const busy = !!action && (action.pending || (!action.error && !runDone(action, run)));
    return h('div', {'data-gs': 'rollback-action', style: {marginTop: '0.8em'}},
      button('rollback-button', 'fa-undo', 'Rollback', () => act('Rollback', 'rollback', {}), busy),
      h('span', {style: {color: '#6d7f8b'}}, 'rolls ', mono(d.environment), ' back from ', mono(d.snapshot),
        ' to the last Snapshot verified there; ', mono(d.snapshot), ' is rejected and automated promotion out of ', mono(d.environment), ' holds until released'));
  }

  // HistoryView is what ran in the binding's Environment (its PromotionHistory).
  function HistoryView({d}) {
    const hist = d.history;
    if (!hist || !(hist.entries || []).length) {
      return h('div', {'data-gs': 'no-history', style: {color: '#6d7f8b'}}, 'Nothing promoted to ' + d.environment + ' yet.');
    }
    return h('div', {'data-gs': 'history'},
      hist.heldSince ? h('div', {'data-gs': 'held', style: {borderLeft: '4px solid #f4c030', padding: '0.4em 1em', marginBottom: '0.4em'}},
        'Automated promotion out of ', mono(d.environment), ' is held since ', hist.heldSince, ' by rollback ', mono(hist.heldBy),
        '; release: ', mono('argocd gitops rollback ' + d.environment + ' --application ' + d.application + ' --release')) : null,
      (hist.rejected || []).length ? h('div', {'data-gs': 'rejected'}, 'Rejected Snapshots: ', hist.rejected.map((r) => mono(r))) : null,
      table('history', ['Completed', 'Kind', 'Snapshot', 'Result', 'Promoted by', 'Approved by', 'Rolled back by', 'Run', 'Signatures'],
        hist.entries.map((e) => h('tr', {key: e.promotionRun + e.completed}, td(e.completed, 1), td(e.kind, 2), td(e.snapshot, 3), td(e.result, 4),
          td(e.promotedBy || 'unknown', 5), td((e.approvedBy || []).join(', ') || '-', 6), td(e.rolledBackBy || '-', 7), td(e.promotionRun, 8),
          td(signed(e.verifications), 9)))));
  }

  // signed sums up what the signature gate verified of a step's images: how
  // many verified, by whom, with which attestations.
  function signed(vs) {
    if (!(vs || []).length) {
      return '-';
    }
    const ok = vs.filter((v) => v.verified);
    const by = [...new Set(ok.flatMap((v) => (v.signers || []).concat(v.attestations || [])))];
    return ok.length + '/' + vs.length + ' verified' + (by.length ? ' (' + by.join(', ') + ')' : '');
  }

  // --- GitOpsDeployment -------------------------------------------------------

  function GitOpsDeploymentView({d, actions}) {
    const src = d.source || {};
    const dst = d.destination || {};
    const rows = [
      ['GitOpsDeployment', mono(d.namespace + '/' + d.name)],
      ['Type', d.type],
      ['Source', h('span', null, mono(src.repoURL || ''), src.path ? h('span', null, ' path ', mono(src.path)) : null,
        h('span', null, ' at ', mono(src.targetRevision || 'HEAD')))],
      ['Destination', h('span', null, dst.environment ? h('span', null, 'ManagedEnvironment ', mono(dst.environment)) : 'this cluster',
        ', namespace ', mono(dst.namespace || d.namespace))],
      ['Sync / health', h('span', null, badge(d.sync || 'Unknown', 'sync'), badge(d.health || 'Unknown', 'health'))],
    ];
    const runs = d.syncRuns || [];
    return h('div', {'data-gs': 'gitopsdeployment'},
      box(null,
        h('table', {'data-gs': 'summary'}, h('tbody', null, rows.map(([k, v]) =>
          h('tr', {key: k}, h('td', {style: {fontWeight: 'bold', padding: '2px 1em 2px 0'}}, k), td(v, 'v'))))),
        h(Conditions, {conditions: d.conditions, fix: describe(d, 'gitopsdeployment')}),
        h(SyncAction, actions)),
      box(null, label('SyncRuns'),
        runs.length
          ? table('syncruns', ['SyncRun', 'Phase', 'Revision', 'Sync / health', 'Message', 'Created'],
            runs.map((r) => h('tr', {key: r.name}, td(r.name, 1), td(badge(r.phase || 'Waiting'), 2), td(mono(short(r.revision)), 3),
              td(h('span', null, badge(r.sync), badge(r.health)), 4), td(r.message, 5), td(r.created, 6))))
          : h('div', {'data-gs': 'no-syncruns', style: {color: '#6d7f8b'}},
            'No SyncRuns yet. ', d.type === 'manual' ? 'A manual deployment syncs when you create a GitOpsDeploymentSyncRun for it.' : 'An automated deployment syncs by itself.')));
  }

  // --- SnapshotEnvironmentBinding: the promotion path ------------------------

  // Gates of an Environment (spec.gates) with the Approve and Freeze /
  // Unfreeze buttons; the proxy acts only for a user the tenant mapping names.
  function Gates({env, actions, snapshot}) {
    const g = env.gates;
    if (!g) return null;
    const frozen = !!(g.freeze && g.freeze.frozen);
    const busy = !!actions.action && actions.action.pending;
    const lines = [];
    if (frozen) {
      lines.push(h('div', {key: 'frozen', 'data-gs': 'frozen', style: {color: '#e96d76'}}, h('i', {className: 'fa fa-snowflake', style: {marginRight: 4}}),
        'Frozen', g.freeze.by ? ' by ' + g.freeze.by : '', g.freeze.reason ? ': ' + g.freeze.reason : ''));
    }
    (g.freezeWindows || []).forEach((w, i) => lines.push(h('div', {key: 'w' + i, 'data-gs': 'freeze-window'},
      'Freeze window ', mono(w.schedule), ' for ', w.duration, w.timeZone ? ' (' + w.timeZone + ')' : '', w.reason ? ': ' + w.reason : '')));
    if (g.soakTime) lines.push(h('div', {key: 'soak', 'data-gs': 'soak'}, 'Soak ', g.soakTime, ' before its children'));
    if (g.approvals) {
      const who = (g.approvals.users || []).concat((g.approvals.groups || []).map((x) => 'group ' + x));
      lines.push(h('div', {key: 'approvals', 'data-gs': 'approvals'}, g.approvals.required + ' approval(s)', who.length ? ' by ' + who.join(', ') : ''));
    }
    return h('div', {'data-gs': 'gates', style: {fontSize: '0.85em', marginTop: '0.4em', borderTop: '1px dashed #dee6eb', paddingTop: '0.3em'}},
      label('Gates'), lines,
      h('div', {style: {marginTop: '0.3em'}},
        g.approvals && snapshot ? button('approve-button', 'fa-check', 'Approve ' + snapshot,
          () => actions.act('Approve', 'approve', {environment: env.name, snapshot}), busy) : null,
        button(frozen ? 'unfreeze-button' : 'freeze-button', 'fa-snowflake', frozen ? 'Unfreeze' : 'Freeze',
          () => actions.act(frozen ? 'Unfreeze' : 'Freeze', frozen ? 'unfreeze' : 'freeze', {environment: env.name}), busy)));
  }

  function EnvironmentCard({env, actions, snapshot}) {
    const comps = env.components || [];
    const changed = env.changed || [];
    return h('div', {'data-gs': 'env', 'data-gs-env': env.name, className: 'gs-env' + (env.current ? ' gs-env--current' : ''),
      style: {flex: '0 0 auto', minWidth: 260, maxWidth: 520, border: env.current ? '2px solid #0dadea' : '1px solid #dee6eb',
        borderRadius: 4, padding: '0.6em 0.8em', background: '#fff'}},
      h('div', {style: {fontWeight: 'bold', fontSize: '1.1em'}}, env.displayName || env.name,
        env.current ? h('span', {style: {fontWeight: 'normal', color: '#0dadea', marginLeft: 6}}, '(this Application)') : null),
      h('div', {style: {fontSize: '0.85em', color: '#6d7f8b'}}, env.name, env.strategy ? ' · ' + env.strategy : '',
        env.parent ? ' · after ' + env.parent : ''),
      h(Gates, {env, actions, snapshot}),
      env.snapshot
        ? h('div', null,
          label('Snapshot'), h('div', {'data-gs': 'snapshot'}, mono(env.snapshot)),
          comps.length
            ? table('components', ['Component', 'Image', 'Sync / health'],
              comps.map((c) => h('tr', {key: c.name, 'data-gs-component': c.name},
                td(h('span', null, c.name, changed.indexOf(c.name) >= 0
                  ? h('span', {'data-gs': 'changed', title: 'image differs from ' + env.parent, style: {color: '#f4a030', marginLeft: 4}}, '● changed') : null), 1),
                td(h('code', {style: {fontSize: '0.9em', whiteSpace: 'nowrap'}}, c.image || 'unknown'), 2),
                td(h('span', null, badge(c.sync || 'Unknown'), badge(c.health || 'Unknown')), 3))))
            : h('div', {style: {color: '#6d7f8b'}}, 'No components deployed yet.'),
          changed.length
            ? h('div', {'data-gs': 'diff', style: {marginTop: '0.4em', color: '#b0761a'}}, 'Differs from ' + env.parent + ': ' + changed.join(', '))
            : env.parent && comps.length ? h('div', {style: {marginTop: '0.4em', color: '#6d7f8b'}}, 'Same images as ' + env.parent) : null)
        : h('div', {'data-gs': 'not-deployed', style: {color: '#6d7f8b', marginTop: '0.6em'}}, 'Not deployed here: no SnapshotEnvironmentBinding.'));
  }

  function PromotionPath({path, actions, snapshot}) {
    if (!path || !path.length) {
      return h('div', {'data-gs': 'no-environments', style: {color: '#6d7f8b'}}, 'No Environments in this namespace.');
    }
    const depths = [];
    path.forEach((e) => (depths[e.depth] = (depths[e.depth] || []).concat([e])));
    return h('div', {'data-gs': 'path', style: {display: 'flex', alignItems: 'flex-start', overflowX: 'auto', gap: 8, padding: '0.4em 0'}},
      depths.map((envs, i) => [
        i > 0 ? h('div', {key: 'arrow-' + i, style: {alignSelf: 'center', fontSize: '1.6em', color: '#8fa4b1'}}, '→') : null,
        h('div', {key: 'level-' + i, style: {display: 'flex', flexDirection: 'column', gap: 8}},
          envs.map((e) => h(EnvironmentCard, {key: e.name, env: e, actions, snapshot}))),
      ]));
  }

  // AnalysisView lists a step's analysis checks: the value measured,
  // successes and failures, and when the next measurement is due.
  function AnalysisView({analysis}) {
    if (!analysis || !analysis.length) {
      return null;
    }
    return h('table', {'data-gs': 'analysis', style: {margin: '0.2em 0 0.4em 0', fontSize: '0.9em'}},
      h('tbody', null, analysis.map((a) => h('tr', {key: a.name, 'data-gs-check': a.name},
        td(mono(a.name), 1), td(badge(a.phase), 2), td(a.value ? mono(a.value) : '', 3),
        td(String(a.successes || 0) + ' ok, ' + String(a.failures || 0) + ' failed', 4),
        td(a.message, 5), td(a.next ? 'next check ' + a.next : (a.last ? 'last check ' + a.last : ''), 6)))));
  }

  function PromotionRunView({run}) {
    if (!run) {
      return h('div', {'data-gs': 'no-promotionruns', style: {color: '#6d7f8b'}},
        'No PromotionRun for this application yet. Create one to promote a Snapshot along the path.');
    }
    const steps = run.steps || [];
    // The one condition that says what a run that does not move waits for, and until when.
    const waiting = (run.conditions || []).filter((c) => c.type === 'Waiting' && c.status === 'True')[0];
    return h('div', {'data-gs': 'promotionrun', 'data-gs-name': run.name},
      h('div', null, mono(run.name), ': Snapshot ', mono(run.snapshot),
        run.target ? h('span', null, ' to ', mono(run.target)) : null,
        run.initial ? h('span', null, ' automatically from ', mono(run.initial)) : null, ' ',
        badge(run.state || 'Waiting', 'state'), badge(run.result, 'result'),
        h('span', {style: {color: '#6d7f8b', marginLeft: 4}}, run.created)),
      waiting
        ? h('div', {'data-gs': 'waiting', style: {borderLeft: '4px solid #f4a030', background: '#fdf6ec', padding: '0.4em 1em', margin: '0.4em 0'}},
          h('i', {className: 'fa fa-hourglass-half', style: {marginRight: 6}}), h('b', null, 'Waiting (' + waiting.reason + '): '), waiting.message)
        : null,
      steps.length
        ? h('ol', {'data-gs': 'steps', style: {margin: '0.4em 0 0 1.2em', padding: 0}},
          steps.map((s) => h('li', {key: s.step, 'data-gs-step': s.environment}, mono(s.environment), ' ', badge(s.status), s.message,
            h(AnalysisView, {analysis: s.analysis}))))
        : null,
      h(Conditions, {conditions: run.conditions, fix: h('span', null, 'check ', mono('kubectl describe promotionrun ' + run.name))}));
  }

  // gatedSnapshot is what Approve approves: the Snapshot of the newest run
  // awaiting approval, else the one this binding runs.
  function gatedSnapshot(d) {
    const waiting = (d.promotionRuns || []).filter((r) => (r.conditions || []).some((c) => c.type === 'Waiting' && c.reason === 'AwaitingApproval'))[0];
    return waiting ? waiting.snapshot : d.snapshot;
  }

  function BindingView({d, actions}) {
    const runs = d.promotionRuns || [];
    return h('div', {'data-gs': 'binding'},
      box(null,
        h('div', null, 'Application ', h('b', {'data-gs': 'application'}, d.application), ' in ', mono(d.namespace),
          ' · this Application deploys component ', h('b', {'data-gs': 'component'}, d.component), ' to ',
          h('b', {'data-gs': 'environment'}, d.environment), ' (SnapshotEnvironmentBinding ', mono(d.name), ')'),
        h(Conditions, {conditions: d.conditions, fix: describe(d, 'snapshotenvironmentbinding')})),
      box(null, label('Promotion path'), h(PromotionPath, {path: d.path, actions, snapshot: gatedSnapshot(d)}), h(PromoteAction, Object.assign({d}, actions)),
        h(RollbackAction, Object.assign({d}, actions))),
      box(null, label('History of ' + d.environment), h(HistoryView, {d})),
      box(null, label('Last PromotionRun'), h(PromotionRunView, {run: runs[0]}),
        runs.length > 1
          ? h('div', null, label('Earlier PromotionRuns'),
            table('promotionruns', ['PromotionRun', 'Snapshot', 'State', 'Result', 'Created'],
              runs.slice(1).map((p) => h('tr', {key: p.name}, td(p.name, 1), td(p.snapshot, 2), td(p.state, 3), td(p.result, 4), td(p.created, 5)))))
          : null));
  }

  // --- the tab and the status-panel item -------------------------------------

  function Panel({application}) {
    const [action, setAction] = React.useState(null);
    const inFlight = !!action && !action.error && !action.done;
    const {data, error} = useDeployment(application, inFlight);
    const run = runOf(data, action);
    React.useEffect(() => {
      if (action && action.name && !action.done && runDone(action, run)) setAction(Object.assign({}, action, {done: true}));
    }, [action, run]);
    const act = (what, path, body) => {
      setAction({what, pending: true});
      call(application, 'POST', path, body || {})
        .then(({ok, status, body: res}) => setAction(ok ? {what, kind: res.kind, name: res.name} : {what, error: res.error || 'HTTP ' + status}))
        .catch((e) => setAction({what, error: String(e)}));
    };
    const actions = {act, action, run, application};
    if (error && !data) {
      const hint = error.status === 401 || error.status === 403
        ? 'argocd-server did not forward the request: ask an admin for "extensions, invoke, gitops-service" in argocd-rbac-cm.'
        : error.status === 404 ? 'The GitOps Service object behind this Application is gone, or the Application is not ours.'
          : error.status >= 500 || error.status === 0 ? 'The GitOps Service sidecar did not answer; see its log.' : '';
      return box({'data-gs': 'error'}, h('b', null, 'GitOps Service: '), error.message, hint ? h('div', {style: {color: '#6d7f8b'}}, hint) : null);
    }
    if (!data) {
      return box({'data-gs': 'loading'}, h('i', {className: 'fa fa-circle-notch fa-spin', style: {marginRight: 6}}), 'Loading the GitOps Service view…');
    }
    return h('div', {'data-gs': 'panel', style: {padding: '0.5em 0'}},
      data.kind === 'SnapshotEnvironmentBinding' ? h(BindingView, {d: data, actions}) : h(GitOpsDeploymentView, {d: data, actions}));
  }

  const Tab = (props) => {
    if (!ours(props.application)) {
      return box({'data-gs': 'not-ours'}, 'This Application was not made by the GitOps Service.');
    }
    // Keyed: another Application gets a panel (and action state) of its own.
    const app = props.application;
    return h(Panel, {key: app.metadata.namespace + '/' + app.metadata.name, application: app});
  };

  function StatusItem({application}) {
    const {data} = useDeployment(application, false);
    let value = '…';
    if (data && data.kind === 'SnapshotEnvironmentBinding') {
      value = h('span', null, h('b', {'data-gs': 'status-environment'}, data.environment), ' · ', mono(data.snapshot));
    } else if (data) {
      value = h('span', {'data-gs': 'status-type'}, data.type, ' · ', data.sync || 'Unknown');
    }
    return h('div', {className: 'application-status-panel__item', 'data-gs': 'status-item'},
      h('div', {style: {lineHeight: '19.5px', marginBottom: '0.3em'}}, h('label', {style: {fontSize: '12px', fontWeight: 600, color: '#6d7f8b'}}, 'GITOPS SERVICE')),
      h('div', {className: 'application-status-panel__item-value'}, value));
  }
  const Status = (props) => (ours(props.application) ? h(StatusItem, {application: props.application}) : null);

  window.extensionsAPI.registerResourceExtension(Tab, 'argoproj.io', 'Application', 'GitOps Service', {icon: 'fa fa-code-branch'});
  if (window.extensionsAPI.registerStatusPanelExtension) {
    window.extensionsAPI.registerStatusPanelExtension(Status, 'GitOps Service', 'gitops-service');
  }
})(window);
