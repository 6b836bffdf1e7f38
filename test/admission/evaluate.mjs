// Evaluates a ValidatingAdmissionPolicy's CEL the way the API server applies it to one request:
// every matchCondition must be true for the policy to apply; variables are evaluated in order and
// visible as `variables.<name>`; each validation that is false denies with its message.
// stdin:  {"policy": <the policy's spec>, "cases": [{"name", "username", "operation",
//          "oldObject", "object"}]}
// stdout: [{"name", "matched", "denied": [messages], "error"}]
import {evaluate} from '@marcbachmann/cel-js'

const input = JSON.parse(await new Promise((resolve) => {
  let data = ''
  process.stdin.on('data', (c) => { data += c })
  process.stdin.on('end', () => resolve(data))
}))
const spec = input.policy
const results = []
for (const c of input.cases) {
  const ctx = {
    object: c.object,
    oldObject: c.oldObject,
    request: {userInfo: {username: c.username}, operation: c.operation || 'UPDATE'},
    variables: {},
  }
  const result = {name: c.name, matched: true, denied: [], error: null}
  try {
    for (const m of spec.matchConditions || []) {
      if (evaluate(m.expression, ctx) !== true) result.matched = false
    }
    if (result.matched) {
      for (const v of spec.variables || []) ctx.variables[v.name] = evaluate(v.expression, ctx)
      for (const v of spec.validations) {
        const ok = evaluate(v.expression, ctx)
        if (typeof ok !== 'boolean') throw new Error(`validation "${v.expression}" gave ${typeof ok}, not a bool`)
        if (!ok) result.denied.push(v.message)
      }
    }
  } catch (e) {
    result.error = String(e && e.message ? e.message : e)
  }
  results.push(result)
}
process.stdout.write(JSON.stringify(results))
