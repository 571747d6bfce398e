// Loads the panel the way argocd-server's UI does (a script using the global
// React and window.extensionsAPI), renders it for the Application in argv[2]
// with the panel API answering argv[3] (status) and argv[4] (JSON body), and
// prints what a user would see plus the request the panel sent, as JSON.
// React is reduced to createElement/Component: enough for this panel, which
// renders plain elements and has no hooks.
const fs = require('fs');
const path = require('path');

const [application, status, body] = [JSON.parse(process.argv[2]), Number(process.argv[3]), process.argv[4]];
const registered = [];
const requests = [];
class Component {
  constructor(props) { this.props = props; this.state = {}; }
  setState(s) { this.state = Object.assign({}, this.state, s); }
}
global.window = {
  React: {Component, createElement: (type, props, ...children) => ({type, props: props || {}, children: children.flat()})},
  extensionsAPI: {registerResourceExtension: (component, group, kind, title, opts) => registered.push({component, group, kind, title, opts})},
};
global.fetch = (url, opts) => {
  requests.push({url, headers: opts.headers});
  return Promise.resolve({ok: status >= 200 && status < 300, statusText: String(status), json: () => Promise.resolve(JSON.parse(body))});
};

// render expands elements (class and function components too) into text.
function render(node) {
  if (node === null || node === undefined || node === false) return [];
  if (typeof node === 'string' || typeof node === 'number') return [String(node)];
  if (Array.isArray(node)) return node.flatMap(render);
  if (typeof node.type === 'function') {
    if (node.type.prototype instanceof Component) return render(mounted(node).render());
    return render(node.type(node.props));
  }
  return node.children.flatMap(render);
}
const instances = [];
function mounted(node) {
  let inst = instances.find((i) => i.constructor === node.type);
  if (!inst) {
    inst = new node.type(node.props);
    instances.push(inst);
    inst.componentDidMount && inst.componentDidMount();
  }
  return inst;
}

eval(fs.readFileSync(path.join(__dirname, '..', 'extension-gitops-service.js'), 'utf8'));
const ext = registered[0];
const tree = {type: ext.component, props: {application}, children: []};
const before = render(tree);
setTimeout(() => {
  console.log(JSON.stringify({registered: registered.map((r) => ({group: r.group, kind: r.kind, title: r.title})),
    loading: before, shown: render(tree), requests}));
}, 50);
