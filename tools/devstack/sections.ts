import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * Replaces the part of a Markdown file between `<!-- name -->` and `<!-- /name -->`
 * (appending it when missing), so that several suites and benchmarks can each write
 * their own section of RELIABILITY.md or BENCHMARKS.md.
 */
export function writeSection(file: string, name: string, body: string, title = '# Figures\n'): void {
  const section = `<!-- ${name} -->\n${body.trim()}\n<!-- /${name} -->`;
  const text = existsSync(file) ? readFileSync(file, 'utf8') : title;
  const re = new RegExp(`<!-- ${name} -->[\\s\\S]*<!-- /${name} -->`);
  writeFileSync(file, re.test(text) ? text.replace(re, () => section) : `${text.trimEnd()}\n\n${section}\n`);
}
