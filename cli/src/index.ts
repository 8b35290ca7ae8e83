/** The telemetry CLI's parts, for `npm run docs` (the published schema) and the tests. */
export { run, formatProblem, EXIT, type Io } from './cli.js';
export { SCHEMA_FILE, schemaText, telemetryFileSchema, REFERENCES, secretPatterns } from './file-schema.js';
export { compileFileSchema, resolveSecrets, validateFile } from './validate.js';
export { parseYaml, problemAt, type FileProblem, type YamlFile } from './yaml-file.js';
export { envNameOf, exportYaml, type ExportedConfig } from './export.js';
