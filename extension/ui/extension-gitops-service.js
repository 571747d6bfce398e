// The GitOps Service panel of the Argo CD UI: a tab on each Application the
// sidecar made, showing the GitOpsDeployment or SnapshotEnvironmentBinding
// behind it (and, for a binding, the Snapshot's image and the PromotionRuns).
// argocd-server serves this file from /tmp/extensions/gitops-service/ and
// proxies the panel's request to the sidecar's ui-proxy (extension
// "gitops-service" in argocd-cm's extension.config), after checking that the
// user may get this Application. Plain JavaScript (no JSX) with the React
// that Argo CD's UI provides: no build step.
((window) => {
  const React = window.React;
  const h = React.createElement;

  const row = (label, value) =>
    value ? h('tr', {key: label}, h('td', {style: {fontWeight: 'bold', paddingRight: '1em'}}, label), h('td', null, value)) : null;

  const table = (head, rows) =>
    h('table', {style: {marginTop: '1em'}},
      h('thead', null, h('tr', null, head.map((c) => h('th', {key: c, style: {textAlign: 'left', paddingRight: '1em'}}, c)))),
      h('tbody', null, rows));

  class Panel extends React.Component {
    constructor(props) {
      super(props);
      this.state = {data: null, error: null};
    }

    componentDidMount() {
      const app = this.props.application;
      fetch('/extensions/gitops-service/api/v1/deployment', {
        headers: {
          'Argocd-Application-Name': app.metadata.namespace + ':' + app.metadata.name,
          'Argocd-Project-Name': app.spec.project,
        },
      })
        .then((r) => r.json().then((body) => (r.ok ? this.setState({data: body}) : this.setState({error: body.error || r.statusText}))))
        .catch((e) => this.setState({error: String(e)}));
    }

    render() {
      const {data, error} = this.state;
      if (error) {
        return h('div', {className: 'white-box'}, 'GitOps Service: ', error);
      }
      if (!data) {
        return h('div', {className: 'white-box'}, 'Loading…');
      }
      const conditions = (data.conditions || []).map((c) =>
        h('tr', {key: c.type}, h('td', null, c.type), h('td', null, c.status), h('td', null, c.reason), h('td', null, c.message)));
      const components = (data.components || []).map((c) =>
        h('tr', {key: c.name}, h('td', null, c.name), h('td', null, c.sync), h('td', null, c.health), h('td', null, (c.commit || '').slice(0, 7))));
      const runs = (data.promotionRuns || []).map((p) =>
        h('tr', {key: p.name}, h('td', null, p.name), h('td', null, p.snapshot), h('td', null, p.state), h('td', null, p.result),
          h('td', null, (p.environments || []).join(', ')), h('td', null, p.created)));
      return h('div', {className: 'white-box'},
        h('table', null, h('tbody', null,
          row(data.kind, data.namespace + '/' + data.name),
          row('Type', data.type),
          row('Sync / health', data.sync ? data.sync + ' / ' + data.health : ''),
          row('Application', data.application),
          row('Environment', data.environment),
          row('Snapshot', data.snapshot),
          row('Component', data.component),
          row('Image', data.image))),
        conditions.length ? table(['Condition', 'Status', 'Reason', 'Message'], conditions) : null,
        components.length ? table(['Component', 'Sync', 'Health', 'Commit'], components) : null,
        runs.length ? table(['PromotionRun', 'Snapshot', 'State', 'Result', 'Environments', 'Created'], runs) : null);
    }
  }

  // Only our Applications have something to show.
  const Tab = (props) => {
    const labels = (props.application && props.application.metadata.labels) || {};
    if (labels['app.kubernetes.io/managed-by'] !== 'gitops-service') {
      return h('div', {className: 'white-box'}, 'This Application was not made by the GitOps Service.');
    }
    return h(Panel, props);
  };

  window.extensionsAPI.registerResourceExtension(Tab, 'argoproj.io', 'Application', 'GitOps Service', {icon: 'fa fa-code-branch'});
})(window);
