// Validates the OpenAPI document read from stdin with @seriousme/openapi-schema-validator (an ES module, which
// jest's CommonJS runtime cannot load) and prints {valid, errors} as JSON. Used by test/api/contract.test.ts.
import { Validator } from '@seriousme/openapi-schema-validator';

let input = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) input += chunk;
const result = await new Validator().validate(JSON.parse(input));
process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.errors ?? [] }));
