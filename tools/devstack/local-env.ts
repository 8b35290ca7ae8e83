import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';

/** `npm start` writes the running stack's addresses here, so the CLIs find them. */
export const LOCAL_ENV_FILE = process.env.DEVSTACK_ENV_FILE ?? '.stack/env';

export function writeLocalEnv(vars: Record<string, string>): void {
  writeFileSync(
    LOCAL_ENV_FILE,
    Object.entries(vars)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n') + '\n',
    // It holds the registry owner's DATABASE_URL, password included.
    { mode: 0o600 },
  );
  // (mode applies to a new file only)
  chmodSync(LOCAL_ENV_FILE, 0o600);
}

/** process.env, with what `npm start` wrote filled in where a variable is unset. */
export function envWithLocalStack(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (existsSync(LOCAL_ENV_FILE)) {
    for (const line of readFileSync(LOCAL_ENV_FILE, 'utf8').split('\n')) {
      const i = line.indexOf('=');
      if (i > 0 && env[line.slice(0, i)] === undefined) env[line.slice(0, i)] = line.slice(i + 1);
    }
  }
  return env;
}
