// The pool of client processes behind the "8 client processes" measurement. Started once per
// bench (a tsx start costs ~300 ms of the two shared cores) and pointed at a server per run.
import type { ChildProcess } from 'node:child_process';
import { fork } from 'node:child_process';
import type { FromLoadClient, ToLoadClient } from '../fixtures/load-client.js';
import type { Bounds } from './config.js';
import { LOAD_CLIENT, REPO } from './config.js';
import type { Rate } from './load.js';

export class ClientPool {
  private constructor(private readonly children: ChildProcess[]) {}

  /** Starts `size` clients and resolves once every one of them has loaded. */
  static async start(size: number): Promise<ClientPool> {
    const children = Array.from({ length: size }, () =>
      // stdout ignored: the bench's own stdout carries only its JSON result line.
      fork(LOAD_CLIENT, [], { cwd: REPO, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }),
    );
    process.on('exit', () => {
      for (const c of children) c.kill('SIGKILL');
    });
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`load client ${c.pid} did not start within 30 s`)), 30_000);
            c.once('message', () => {
              clearTimeout(timer);
              resolve();
            });
            c.once('exit', (code) => reject(new Error(`load client ${c.pid} exited (${code}) while starting`)));
          }),
      ),
    );
    return new ClientPool(children);
  }

  get size(): number {
    return this.children.length;
  }

  private ask(child: ChildProcess, m: ToLoadClient, timeoutMs: number): Promise<FromLoadClient> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`load client ${child.pid} did not answer ${m.type} within ${timeoutMs} ms`)), timeoutMs);
      child.once('message', (reply: FromLoadClient) => {
        clearTimeout(timer);
        if (reply.type === 'failed') reject(new Error(`load client ${child.pid}: ${reply.message}`));
        else resolve(reply);
      });
      child.send(m);
    });
  }

  /**
   * Each client connects to `socket`, appends to `session(i)` with `inFlight` outstanding, all
   * starting together; the rate is every completed call over the longest client's time.
   */
  async run(socket: string, session: (i: number) => string, inFlight: number, bounds: Bounds): Promise<Rate> {
    await Promise.all(this.children.map((c, i) => this.ask(c, { type: 'prepare', socket, session: session(i) }, 30_000)));
    const per: Bounds = { maxCount: Math.ceil(bounds.maxCount / this.children.length), maxMs: bounds.maxMs };
    const replies = await Promise.all(this.children.map((c) => this.ask(c, { type: 'go', inFlight, bounds: per }, bounds.maxMs + 30_000)));
    let count = 0;
    let seconds = 0;
    for (const r of replies) {
      if (r.type !== 'done') throw new Error(`unexpected ${r.type}`);
      count += r.count;
      seconds = Math.max(seconds, r.seconds);
    }
    return { rate: count / seconds, count, seconds };
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.send({ type: 'quit' } satisfies ToLoadClient);
            setTimeout(() => c.kill('SIGKILL'), 5000).unref();
          }),
      ),
    );
  }
}
