// The Graph tab: the selected app's agent tree or workflow graph, drawn as
// SVG from GET /dev/apps/{app}/build_graph, with the node that is running
// or paused highlighted from the session's events (their nodeInfo paths).

const SVG = 'http://www.w3.org/2000/svg';
const W = 130; // node width
const H = 34; // node height
const GX = 18; // gap between nodes of a row
const GY = 44; // gap between rows

function svg(tag, attrs = {}, ...children) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  for (const c of children) if (c) n.append(c);
  return n;
}

// graphOf turns a build_graph entry into nodes and edges: a workflow's own
// graph (ADK's shape: nodes with a name and a type, edges from_node →
// to_node with an optional route, the START node left out), or the tree of
// an agent and its sub-agents, each agent with an edge to each of its tools
// (one node per tool name; a tool named like an agent is that agent).
export function graphOf(info) {
  if (info.graph) {
    const g = info.graph;
    const nodes = (g.nodes || []).filter((n) => n.type !== 'start').map((n) => ({ name: n.name, kind: n.type || 'node' }));
    let start = nodes.length ? nodes[0].name : '';
    const edges = [];
    for (const e of g.edges || []) {
      const from = e.from_node || {};
      const to = e.to_node || {};
      if (from.type === 'start') {
        start = to.name;
        continue;
      }
      edges.push({ from: from.name, to: to.name, route: e.route || '', label: [e.route, e.max ? `≤${e.max}` : ''].filter(Boolean).join(' ') });
    }
    return { start, nodes, edges };
  }
  const nodes = [];
  const edges = [];
  const seen = new Set();
  const edge = (from, to) => {
    if (!edges.some((e) => e.from === from && e.to === to)) edges.push({ from, to, label: '' });
  };
  const walk = (a) => {
    nodes.push({ name: a.name, kind: 'agent' });
    seen.add(a.name);
    for (const s of a.sub_agents || []) {
      edge(a.name, s.name);
      walk(s);
    }
  };
  walk(info);
  const tools = (a) => {
    for (const t of a.tools || []) {
      if (!t || !t.name) continue;
      if (!seen.has(t.name)) {
        nodes.push({ name: t.name, kind: 'tool' });
        seen.add(t.name);
      }
      edge(a.name, t.name);
    }
    for (const s of a.sub_agents || []) tools(s);
  };
  tools(info);
  return { start: info.name, nodes, edges };
}

// layout places nodes in rows by their distance from the start, top to
// bottom, each row centred (back edges of loops do not move a node down).
export function layout(g) {
  const col = new Map([[g.start, 0]]);
  const queue = [g.start];
  while (queue.length) {
    const n = queue.shift();
    for (const e of g.edges) {
      if (e.from === n && !col.has(e.to)) {
        col.set(e.to, col.get(n) + 1);
        queue.push(e.to);
      }
    }
  }
  let extra = Math.max(0, ...col.values()) + 1;
  for (const n of g.nodes) if (!col.has(n.name)) col.set(n.name, extra++);
  const width = new Map(); // nodes per row
  for (const n of g.nodes) width.set(col.get(n.name), (width.get(col.get(n.name)) || 0) + 1);
  const widest = Math.max(...width.values());
  const used = new Map();
  const pos = new Map();
  for (const n of g.nodes) {
    const row = col.get(n.name);
    const i = used.get(row) || 0;
    used.set(row, i + 1);
    const offset = ((widest - width.get(row)) * (W + GX)) / 2;
    pos.set(n.name, { x: 10 + offset + i * (W + GX), y: 10 + row * (H + GY) });
  }
  return pos;
}

// nodeStates reads, from a session's events, the state of each node of
// the top-level graph: "done", "running" or "paused". A node is known by
// the second segment of a nodeInfo path ("wf/name@run/...").
export function nodeStates(events) {
  const states = new Map();
  const answered = new Set();
  for (const ev of events) {
    if (ev.author === 'user') {
      for (const p of (ev.content && ev.content.parts) || []) {
        if (p.functionResponse && p.functionResponse.id) answered.add(p.functionResponse.id);
      }
    }
  }
  for (const ev of events) {
    const path = ev.nodeInfo && ev.nodeInfo.path;
    if (!path) continue;
    const seg = path.split('/')[1];
    if (!seg) continue;
    const name = seg.split('@')[0];
    const own = path.split('/').length === 2;
    const ended = own && ev.actions && ev.actions.endOfAgent && (ev.nodeInfo.outputFor || []).includes(path);
    if (ended) states.set(name, 'done');
    else if ((ev.longRunningToolIds || []).some((id) => !answered.has(id))) states.set(name, 'paused');
    else if (states.get(name) !== 'paused') states.set(name, 'running');
  }
  // An invocation that finished leaves nothing running.
  const last = events[events.length - 1];
  if (last && last.actions && last.actions.endOfAgent && last.nodeInfo && !last.nodeInfo.path.includes('/')) {
    for (const [k, v] of states) if (v === 'running') states.set(k, 'done');
  }
  return states;
}

// nodeRoutes reads, from a session's events, the route each node of the
// top-level graph chose when it last ended (actions.route of its end).
export function nodeRoutes(events) {
  const routes = new Map();
  for (const ev of events) {
    const path = ev.nodeInfo && ev.nodeInfo.path;
    if (!path || path.split('/').length !== 2 || !(ev.actions && ev.actions.endOfAgent)) continue;
    if (!(ev.nodeInfo.outputFor || []).includes(path)) continue;
    const name = path.split('/')[1].split('@')[0];
    routes.set(name, typeof ev.actions.route === 'string' ? ev.actions.route : '');
  }
  return routes;
}

// takenEdges returns the edges of g a finished node took, by the rule the
// workflow follows: an edge without a route, one with the node's route, a
// default edge when no other edge out of the node has that route.
export function takenEdges(g, routes) {
  const taken = new Set();
  for (const e of g.edges) {
    if (!routes.has(e.from)) continue;
    const r = routes.get(e.from);
    const others = g.edges.filter((o) => o.from === e.from && o.route === r && r !== '');
    if (!e.route || e.route === r || (e.route === '__DEFAULT__' && others.length === 0)) taken.add(e);
  }
  return taken;
}

// GraphView draws one app's graph into a container element.
export class GraphView {
  constructor(container) {
    this.container = container;
    this.info = null;
    this.states = new Map();
    this.routes = new Map();
  }

  async load(client, app) {
    this.info = null;
    this.states = new Map();
    this.routes = new Map();
    if (app) {
      try {
        const res = await client.request('GET', `/dev/apps/${encodeURIComponent(app)}/build_graph`);
        this.info = res && res.root_agent;
      } catch { /* an older server: no graph */ }
    }
    this.render();
  }

  // update recomputes the highlights from the session's events; while the
  // tab is hidden it only remembers them, and show draws them.
  update(events) {
    this.events = events;
    if (this.container.closest('[hidden]')) return;
    this.states = nodeStates(events);
    this.routes = nodeRoutes(events);
    this.render();
  }

  show() {
    this.update(this.events || []);
  }

  render() {
    const box = this.container;
    if (!this.info) {
      box.replaceChildren(Object.assign(document.createElement('p'), { className: 'empty', textContent: 'No graph for this app.' }));
      return;
    }
    const g = graphOf(this.info);
    const taken = takenEdges(g, this.routes || new Map());
    const pos = layout(g);
    let w = 0;
    let h = 0;
    for (const p of pos.values()) {
      w = Math.max(w, p.x + W + 60); // room for the curves of back edges
      h = Math.max(h, p.y + H + 10);
    }
    // Wide graphs shrink to the panel; narrow ones keep their size.
    const root = svg('svg', { class: 'graph', width: '100%', viewBox: `0 0 ${w} ${h}`, role: 'img', 'aria-label': `Graph of ${this.info.name}` });
    root.style.maxWidth = `${w}px`;
    root.append(svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' },
      svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'graph-arrow' }))));
    for (const e of g.edges) {
      const a = pos.get(e.from);
      const b = pos.get(e.to);
      if (!a || !b) continue;
      const back = b.y <= a.y;
      const x1 = back ? a.x + W : a.x + W / 2;
      const y1 = back ? a.y + H / 2 : a.y + H;
      const x2 = back ? b.x + W : b.x + W / 2;
      const y2 = back ? b.y + H / 2 : b.y;
      const d = back
        ? `M ${x1} ${y1} C ${x1 + 50} ${y1}, ${x2 + 50} ${y2}, ${x2} ${y2}`
        : `M ${x1} ${y1} C ${x1} ${y1 + GY / 2}, ${x2} ${y2 - GY / 2}, ${x2} ${y2}`;
      root.append(svg('path', { d, class: taken.has(e) ? 'graph-edge taken' : 'graph-edge', 'marker-end': 'url(#arrow)' }));
      if (e.label) {
        const t = svg('text', { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, class: 'graph-label' });
        t.textContent = e.label;
        root.append(t);
      }
    }
    for (const n of g.nodes) {
      const p = pos.get(n.name);
      const state = this.states.get(n.name) || '';
      const grp = svg('g', { class: `graph-node ${n.kind} ${state}`, 'data-node': n.name });
      const title = svg('title');
      title.textContent = `${n.name} (${n.kind})${state ? `: ${state}` : ''}`;
      grp.append(title, svg('rect', { x: p.x, y: p.y, width: W, height: H, rx: n.kind === 'join' ? 18 : 8 }));
      const t = svg('text', { x: p.x + W / 2, y: p.y + H / 2 + 4, 'text-anchor': 'middle' });
      const label = n.kind === 'tool' ? `🔧 ${n.name}` : n.name;
      t.textContent = label.length > 20 ? `${label.slice(0, 19)}…` : label;
      grp.append(t);
      root.append(grp);
    }
    box.replaceChildren(root);
  }
}
