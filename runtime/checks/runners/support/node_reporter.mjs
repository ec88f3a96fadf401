// The runtime's reporter for node's test runner: each test's outcome, written to the destination the
// orchestrator named (outside the tree), one JSON object a line, ending with an "end" line once every
// file's tests have reported. Node runs each test file in a process of its own; this runs in the parent.
export default async function * reporter (source) {
  for await (const event of source) {
    const data = event.data || {}
    if (event.type === 'test:start') {
      yield JSON.stringify({ event: 'start', name: data.name, nesting: data.nesting, file: data.file }) + '\n'
    } else if (event.type === 'test:pass' || event.type === 'test:fail') {
      const details = data.details || {}
      const error = details.error
      yield JSON.stringify({
        event: event.type === 'test:pass' ? 'pass' : 'fail',
        name: data.name,
        nesting: data.nesting,
        file: data.file,
        skip: data.skip !== undefined && data.skip !== false,
        todo: data.todo !== undefined && data.todo !== false,
        suite: details.type === 'suite',
        failureType: error && typeof error.failureType === 'string' ? error.failureType : '',
        message: error ? String((error.cause && error.cause.message) || error.message || error).slice(0, 2000) : ''
      }) + '\n'
    }
  }
  yield JSON.stringify({ event: 'end' }) + '\n'
}
