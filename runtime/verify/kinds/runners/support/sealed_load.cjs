'use strict'
// The loader of a sealed test file under node's runner: a test file the orchestrator keeps out of the tree's
// reach (a hidden test, a tamper check). Its place in the tree holds only a read-only stub that calls `load`;
// the source comes from the orchestrator's socket, which serves it once: code that asks for it first takes it
// from the runner, and the runner's own ask is then seen as the second (the run is tampered with). The source
// is compiled here, as the file's own CommonJS module, and never written to disk: neither the tree's files nor
// a stack's file and line give it away. node's standard library only.

const { execFileSync } = require('child_process')

const LIMIT = 64 * 1024 * 1024
// node has no synchronous socket, and a test file's tests are declared as it loads: a child of the same node
// asks the socket and hands the source back on its standard output (no option, variable or file of the tree).
const ASK = [
  "const c = require('net').createConnection(process.argv[1], () => c.end(process.argv[2] + '\\n'))",
  "c.on('error', () => process.exit(2))",
  'c.pipe(process.stdout)'
].join('\n')

exports.load = function load (mod, server, ident) {
  const source = execFileSync(process.execPath, ['-e', ASK, server, ident],
    { env: {}, maxBuffer: LIMIT, stdio: ['ignore', 'pipe', 'ignore'] })
  if (source.length === 0) {
    throw new Error(`sealed test module ${ident}: its source was taken before its runner loaded it`)
  }
  mod._compile(source.toString('utf8'), mod.filename)
}
