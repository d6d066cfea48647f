// A small Node service for bulkheadlab's external mode: /a calls dependency
// A and /b calls dependency B, each call holding a permit of a pool.
//   --mode shared    one pool of --pool permits for both endpoints
//   --mode bulkhead  one pool of --pool/2 permits per endpoint
//   --mode unbounded no pool at all: every request is an await on its
//                    dependency and nothing caps how many there are (nor
//                    the agent's sockets), the event loop's natural state
// --state-bytes N makes each dependency call hold a Buffer of N bytes (its
// request's state, every page written) until it returns: the memory an
// await holds.
// A full pool answers 503 with "X-Reject: bulkhead" at once (no queue); a
// dependency call that takes longer than --timeout ms answers 504; a
// dependency error answers 502. The proxies' addresses come from the
// environment bulkheadlab sets (BULKHEADLAB_PROXY_A, BULKHEADLAB_PROXY_B).
// --leak error|timeout|cancel makes the service forget to release a call's
// permit on that path (a 502 from A, a timeout, or its client gone while the
// call ran), the defect of seed-004: the tests use it to show that the
// harness finds the permits lost in a service of another runtime.
// No packages needed: node server.js --mode shared --port 8201
'use strict';
const http = require('http');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const mode = args.mode || 'bulkhead';
const port = Number(args.port || 8201);
const size = Number(args.pool || 20);
const timeout = Number(args.timeout || 250);
const leak = args.leak || 'none';
const stateBytes = Number(args['state-bytes'] || 0);
const deps = { a: process.env.BULKHEADLAB_PROXY_A, b: process.env.BULKHEADLAB_PROXY_B };

class Pool {
  constructor(limit) { this.limit = limit; this.inUse = 0; this.rejected = 0; }
  tryAcquire() { if (this.inUse >= this.limit) { this.rejected++; return false; } this.inUse++; return true; }
  release() { this.inUse--; }
}
// No pool: every call is admitted; inUse still counts the calls in flight.
class NoPool extends Pool {
  constructor() { super(Infinity); }
  tryAcquire() { this.inUse++; return true; }
}
const pools = mode === 'shared'
  ? (() => { const p = new Pool(size); return { a: p, b: p, all: { shared: p } }; })()
  : mode === 'unbounded'
    ? (() => { const a = new NoPool(), b = new NoPool(); return { a, b, all: {} }; })()
    : (() => { const a = new Pool(size / 2), b = new Pool(size / 2); return { a, b, all: { a, b } }; })();

const agent = new http.Agent({ keepAlive: true, maxSockets: mode === 'unbounded' ? Infinity : 256 });

// state allocates a call's request state, every page written so that it is
// resident; the call keeps it until it finishes.
function state() {
  if (stateBytes <= 0) return null;
  const b = Buffer.allocUnsafe(stateBytes);
  for (let i = 0; i < b.length; i += 4096) b[i] = 1;
  return b;
}

function callDep(name, res, pool) {
  const [host, p] = deps[name].split(':');
  let held = state();
  let done = false;
  const leaks = (status) => (leak === 'error' && status === 502) || (leak === 'timeout' && status === 504) ||
    (leak === 'cancel' && res.destroyed);
  const finish = (status, headers, body) => {
    if (done) return;
    done = true;
    held = null;
    if (!leaks(status)) pool.release();
    res.writeHead(status, headers);
    res.end(body);
  };
  const req = http.get({ host, port: Number(p), path: '/', agent, timeout }, (up) => {
    up.resume();
    up.on('end', () => finish(up.statusCode < 500 ? 200 : 502, { 'X-Dependency-Error': up.statusCode < 500 ? '' : 'status' }, 'ok\n'));
  });
  req.on('timeout', () => { req.destroy(); finish(504, { 'X-Dependency-Error': 'timeout' }, 'timeout\n'); });
  req.on('error', () => finish(502, { 'X-Dependency-Error': 'error' }, 'error\n'));
}

http.createServer((req, res) => {
  const name = req.url.slice(1);
  if (name === 'healthz') { res.end('ok\n'); return; }
  if (name === 'metrics') {
    let out = '';
    for (const [n, p] of Object.entries(pools.all)) {
      out += `node_pool_in_use{pool="${n}"} ${p.inUse}\nnode_pool_limit{pool="${n}"} ${p.limit}\nnode_pool_rejected_total{pool="${n}"} ${p.rejected}\n`;
    }
    for (const n of ['a', 'b']) out += `node_calls_in_flight{dependency="${n}"} ${pools[n].inUse}\n`;
    out += `node_heap_used_bytes ${process.memoryUsage().heapUsed}\nnode_external_bytes ${process.memoryUsage().external}\n`;
    res.end(out);
    return;
  }
  const pool = pools[name];
  if (!pool || !deps[name]) { res.writeHead(404); res.end(); return; }
  if (!pool.tryAcquire()) { res.writeHead(503, { 'X-Reject': 'bulkhead' }); res.end('full\n'); return; }
  callDep(name, res, pool);
}).listen(port, '127.0.0.1', () => console.log(`node service (${mode}, pool ${size}) on 127.0.0.1:${port}`));

process.on('SIGTERM', () => process.exit(0));
