// Follows one session's transcript: prints each new entry as it is appended, and rides a server
// restart (the client reconnects and subscribes again from where it was, so nothing appended
// while the server was away is missed or printed twice). The README shows it;
// test/client/follow-example.test.ts runs it.
//   node examples/follow-transcript.mjs SOCKET SESSION
import { connect } from 'herrscher-state';

const [socket, session] = process.argv.slice(2);
const client = await connect({ socket, wait: true, timeoutMs: 10_000, reconnect: true });
client.onNotification('transcript/didAppend', ({ name, seq, entry }) => {
  console.log(`${name} #${seq} ${entry.role}: ${entry.text}`);
});
client.onConnectionState((s) => console.error(`connection: ${s.state}`));
await client.watchSubscribe({ transcripts: [session] });
console.error(`following ${session}`);
process.once('SIGTERM', () => void client.close());
