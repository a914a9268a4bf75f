// Rates and error percentages from the graph JSON (strings in the API, numbers here).

const num = (v) => (v === undefined || v === null || v === '' ? 0 : Number(v) || 0);

/** Requests per second on an edge (http or grpc; 0 for tcp). */
export function edgeRps(d) {
  const r = (d.traffic && d.traffic.rates) || {};
  return num(r.http) + num(r.grpc);
}

/** Error percentage on an edge (http 4xx+5xx, grpc non-OK). */
export function edgeErrPct(d) {
  const r = (d.traffic && d.traffic.rates) || {};
  if (r.httpPercentErr !== undefined) return num(r.httpPercentErr);
  if (r.grpcPercentErr !== undefined) return num(r.grpcPercentErr);
  return 0;
}

/** Inbound and outbound request rates, errors and tcp bytes of a node. */
export function nodeRates(d) {
  const out = { in: 0, inErr: 0, out: 0, tcpIn: 0, tcpOut: 0 };
  for (const t of d.traffic || []) {
    const r = t.rates || {};
    out.in += num(r.httpIn) + num(r.grpcIn);
    out.inErr += num(r.httpIn4xx) + num(r.httpIn5xx) + num(r.grpcInErr);
    out.out += num(r.httpOut) + num(r.grpcOut);
    out.tcpIn += num(r.tcpIn);
    out.tcpOut += num(r.tcpOut);
  }
  return out;
}

/** Inbound error percentage of a node (NaN without inbound requests). */
export function nodeErrPct(d) {
  const r = nodeRates(d);
  return r.in > 0 ? (100 * r.inErr) / r.in : NaN;
}
