// The runtime's reporter for node's test runner: each test's outcome, written to the destination the
// orchestrator named (a pipe outside the tree, read as it is written), one JSON object a line, ending with
// an "end" line once every file's tests have reported. Node runs each test file in a process of its own;
// this runs in the parent, before any of them starts. Each record carries the run's key, read from the file
// the variable AGENT_RUNTIME_REPORT_KEY names and removed at once, and its number: a line a test file's
// process adds is seen as such.
import { readFileSync, unlinkSync } from 'node:fs'

function takeKey () {
  const where = process.env.AGENT_RUNTIME_REPORT_KEY
  delete process.env.AGENT_RUNTIME_REPORT_KEY
  if (!where) return ''
  try {
    const key = readFileSync(where, 'utf8').trim()
    unlinkSync(where)
    return key
  } catch {
    return ''
  }
}

const KEY = takeKey()
const stringify = JSON.stringify

export default async function * reporter (source) {
  let n = 0
  const line = (record) => stringify({ ...record, k: KEY, n: n++ }) + '\n'
  for await (const event of source) {
    const data = event.data || {}
    if (event.type === 'test:start') {
      yield line({ event: 'start', name: data.name, nesting: data.nesting, file: data.file })
    } else if (event.type === 'test:pass' || event.type === 'test:fail') {
      const details = data.details || {}
      const error = details.error
      yield line({
        event: event.type === 'test:pass' ? 'pass' : 'fail',
        name: data.name,
        nesting: data.nesting,
        file: data.file,
        skip: data.skip !== undefined && data.skip !== false,
        todo: data.todo !== undefined && data.todo !== false,
        suite: details.type === 'suite',
        failureType: error && typeof error.failureType === 'string' ? error.failureType : '',
        message: error ? String((error.cause && error.cause.message) || error.message || error).slice(0, 2000) : ''
      })
    }
  }
  yield line({ event: 'end' })
}
