// One of the processes `npm test` runs the suite in (test/helpers/shard.ts explains why and how).
import { runShard } from '../helpers/shard.js';

runShard(import.meta.url);
