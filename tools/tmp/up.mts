import { writeFileSync } from 'node:fs';
import { startStack } from '../devstack/stack.js';
const s = await startStack({ dataDir: '/tmp/devstack/data', keepData: true });
writeFileSync('/tmp/devstack/env', `KAFKA=${s.kafkaBrokers}\nCH=${s.clickhouseUrl}\n`);
console.log('up', s.kafkaBrokers, s.clickhouseUrl);
process.on('SIGTERM', () => void s.stop().then(() => process.exit(0)));
setInterval(() => {}, 1 << 30);
