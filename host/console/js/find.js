// The find/hide expression language (README, "Find and hide"). An expression selects either
// nodes or edges, never both: each attribute belongs to one kind. The server evaluates the
// graph's hide and find (meshlens-graph-scope); the console compiles here only to say early why
// an expression cannot be read. Both are checked against crates/graph-scope/tests/expressions.json.
//
//   expr   := term (('or' | '||') term)*          term := factor (('and' | '&&') factor)*
//   factor := ('!' | 'not') factor | '(' expr ')' | attr op value | flag
//   op     := '=' | '!=' | '>' | '>=' | '<' | '<='
//
// Node attributes: name, ns (namespace), node (app, workload, service, unknown, box), app,
// version, workload, service; flags hasCB, hasVS, hasHTTPRoute, hasMissingSC (sc), ambient, waypoint, dead, unused, outside,
// root, se (service entry), inaccessible, box.
// Edge attributes: rps (http or grpc requests/s), %error, tcp (bytes/s), rt (response
// time, ms), protocol; flag mtls.

import { edgeRps, edgeErrPct } from './rates.js';

const NODE_ATTRS = {
  name: (d) => nodeName(d),
  ns: (d) => d.namespace, namespace: (d) => d.namespace,
  node: (d) => (d.isGroup ? 'box' : d.nodeType),
  app: (d) => d.app, version: (d) => d.version, workload: (d) => d.workload, service: (d) => d.service,
};
const NODE_FLAGS = {
  hascb: (d) => !!d.hasCB, hasvs: (d) => !!d.hasVS, hashttproute: (d) => !!d.hasHTTPRoute, hasmissingsc: (d) => !!d.hasMissingSC, sc: (d) => !!d.hasMissingSC,
  ambient: (d) => !!d.isAmbient, isambient: (d) => !!d.isAmbient, waypoint: (d) => !!d.isWaypoint, iswaypoint: (d) => !!d.isWaypoint,
  dead: (d) => !!d.isDead, isdead: (d) => !!d.isDead, unused: (d) => !!d.isUnused, isunused: (d) => !!d.isUnused,
  outside: (d) => !!d.isOutside, isoutside: (d) => !!d.isOutside, root: (d) => !!d.isRoot, isroot: (d) => !!d.isRoot,
  se: (d) => !!d.isServiceEntry, isserviceentry: (d) => !!d.isServiceEntry,
  inaccessible: (d) => !!d.isInaccessible, isinaccessible: (d) => !!d.isInaccessible,
  box: (d) => !!d.isGroup, isgroup: (d) => !!d.isGroup,
};
const EDGE_ATTRS = {
  rps: (d) => edgeRps(d), '%error': (d) => edgeErrPct(d), tcp: (d) => Number((d.traffic && d.traffic.rates && d.traffic.rates.tcp) || 0),
  rt: (d) => Number(d.responseTime || 0), responsetime: (d) => Number(d.responseTime || 0),
  protocol: (d) => (d.traffic && d.traffic.protocol) || '',
};
const EDGE_FLAGS = { mtls: (d) => !!d.isMTLS };

/** The name a node is drawn with (also what `name =` compares). */
export function nodeName(d) {
  if (d.nodeType === 'service') return d.service || '';
  if (d.nodeType === 'workload') return d.workload || '';
  if (d.nodeType === 'app') return d.app || '';
  return d.workload || d.app || d.service || d.nodeType || '';
}

function tokenize(text) {
  const re = /\s*(\|\||&&|!=|>=|<=|=|>|<|!|\(|\)|%?[A-Za-z_][\w.\-*]*|-?\d+(?:\.\d+)?|"[^"]*")/y;
  const out = [];
  let pos = 0;
  while (pos < text.length) {
    if (/^\s*$/.test(text.slice(pos))) break;
    re.lastIndex = pos;
    const m = re.exec(text);
    if (!m) throw new Error(`cannot read “${text.slice(pos).trim()}”`);
    out.push(m[1].startsWith('"') ? { v: m[1].slice(1, -1), quoted: true } : { v: m[1] });
    pos = re.lastIndex;
  }
  return out;
}

/** Compiles an expression into `{kind: 'node'|'edge', test(data) -> bool}`; throws with a message. */
export function compile(text) {
  const toks = tokenize(text);
  let i = 0;
  const peek = () => toks[i] && toks[i].v;
  const kw = (t) => t && !toks[i].quoted && t.toLowerCase();
  let kind = null;
  const claim = (k, name) => {
    if (kind && kind !== k) throw new Error(`“${name}” is an ${k} attribute; an expression selects nodes or edges, not both`);
    kind = k;
  };
  function expr() {
    let left = term();
    while (['or', '||'].includes(kw(peek()))) { i++; const l = left, r = term(); left = (d) => l(d) || r(d); }
    return left;
  }
  function term() {
    let left = factor();
    while (['and', '&&'].includes(kw(peek()))) { i++; const l = left, r = factor(); left = (d) => l(d) && r(d); }
    return left;
  }
  function factor() {
    const t = peek();
    if (t === undefined) throw new Error('the expression ends too early');
    if (t === '!' || kw(t) === 'not') { i++; const f = factor(); return (d) => !f(d); }
    if (t === '(') {
      i++;
      const e = expr();
      if (peek() !== ')') throw new Error('a “(” is not closed');
      i++;
      return e;
    }
    i++;
    const name = t.toLowerCase();
    const op = peek();
    if (['=', '!=', '>', '>=', '<', '<='].includes(op)) {
      i++;
      const valTok = toks[i++];
      if (!valTok) throw new Error(`“${t} ${op}” needs a value`);
      const get = NODE_ATTRS[name] || EDGE_ATTRS[name];
      if (!get) throw new Error(`unknown attribute “${t}”`);
      claim(NODE_ATTRS[name] ? 'node' : 'edge', t);
      return comparison(get, op, valTok.v);
    }
    const flag = NODE_FLAGS[name] || EDGE_FLAGS[name];
    if (!flag) throw new Error(`unknown attribute or flag “${t}”`);
    claim(NODE_FLAGS[name] ? 'node' : 'edge', t);
    return flag;
  }
  const test = expr();
  if (i < toks.length) throw new Error(`unexpected “${toks[i].v}”`);
  return { kind, test };
}

function comparison(get, op, raw) {
  const num = Number(raw);
  const numeric = raw !== '' && Number.isFinite(num);
  return (d) => {
    const v = get(d);
    if (op === '=' || op === '!=') {
      const eq = numeric && typeof v === 'number' ? v === num : String(v ?? '') === raw;
      return op === '=' ? eq : !eq;
    }
    if (!numeric) return false;
    const x = typeof v === 'number' ? v : Number(v);
    if (!Number.isFinite(x)) return false;
    return op === '>' ? x > num : op === '>=' ? x >= num : op === '<' ? x < num : x <= num;
  };
}
