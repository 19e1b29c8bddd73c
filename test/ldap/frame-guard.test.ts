// The frame guard on its own (docs/security.md: the LDAP path), between a loopback socket pair and a
// stand-in for ldapts that writes raw frames: a request counts as sent only once written whole (an
// answer to a request still half-written is refused, and the peer never saw the half), one answer per
// bind, search entries then one done, a Notice of Disconnection, a polite close, and the group sync's
// requests of its own beside ldapts's.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { describe, test } from 'node:test';
import { guardFrames } from '../../src/backends/ldap/frame-guard.ts';
import {
  bindResponse,
  FrameSplitter,
  ldapMessage,
  noticeOfDisconnection,
  OP,
  searchResultDone,
  searchResultEntry,
  tlv,
} from '../helpers/ldap-ber.ts';

/** A BindRequest as ldapts writes one (version 3, a name, a simple password). */
const bindRequest = (id: number) =>
  ldapMessage(
    id,
    tlv(
      OP.bindRequest,
      Buffer.from([0x02, 0x01, 0x03]),
      tlv(0x04, Buffer.from('uid=a')),
      tlv(0x80, Buffer.from('pw')),
    ),
  );
const searchRequest = (id: number) => ldapMessage(id, tlv(OP.searchRequest, tlv(0x04, Buffer.from('dc=x'))));

/** A connected loopback pair: the guard's socket and the directory's end, which records what it got. */
async function pair() {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  await once(client, 'connect');
  const [directory] = await accepted;
  const received: Buffer[] = [];
  directory.on('data', (chunk: Buffer) => received.push(chunk));
  directory.on('error', () => undefined);
  const guard = guardFrames(client);
  const passed: Buffer[] = [];
  guard.stream.on('data', (chunk: Buffer) => passed.push(chunk));
  return {
    guard,
    directory,
    received: () => Buffer.concat(received),
    passed: () => new FrameSplitter().push(Buffer.concat(passed)),
    async close() {
      guard.destroy();
      directory.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/** Waits (generously: the machine is shared) until `done()` holds. */
async function until(done: () => boolean): Promise<void> {
  const limit = Date.now() + 5000;
  while (!done()) {
    if (Date.now() > limit) throw new Error('waited 5 s in vain');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('the frame guard', () => {
  test('an answer to a request still half-written is refused, and the directory never saw the half', async () => {
    const p = await pair();
    try {
      const request = bindRequest(2);
      p.guard.stream.write(request.subarray(0, 5));
      // A pause, not a measure: what the guard would forward, it forwards in the same turn.
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(p.received().length, 0, 'a partial request was forwarded');
      p.directory.write(bindResponse(2, 0));
      await assert.rejects(p.guard.ended, {
        message: 'an answer for message id 2 before that request was sent',
      });
      assert.equal(p.guard.failure()?.failure, 'upstream_misconfigured');
      assert.deepEqual(p.passed(), []);
    } finally {
      await p.close();
    }
  });

  test('a whole request is forwarded at once, and its one answer passes; a second is refused', async () => {
    const p = await pair();
    try {
      p.guard.stream.write(bindRequest(2));
      await until(() => p.received().length > 0);
      assert.deepEqual(p.received(), bindRequest(2));
      p.directory.write(bindResponse(2, 49));
      await until(() => p.passed().length === 1);
      assert.deepEqual(
        p.passed().map((frame) => [frame.id, frame.op]),
        [[2, OP.bindResponse]],
      );
      p.directory.write(bindResponse(2, 0));
      await assert.rejects(p.guard.ended, { message: 'an answer for message id 2, which awaits none' });
      assert.equal(p.passed().length, 1);
    } finally {
      await p.close();
    }
  });

  test('a search draws entries and one done; a bind answer for it is refused', async () => {
    const p = await pair();
    try {
      p.guard.stream.write(searchRequest(3));
      await until(() => p.received().length > 0);
      p.directory.write(Buffer.concat([searchResultEntry(3, 'uid=a,dc=x'), searchResultDone(3, 0)]));
      await until(() => p.passed().length === 2);
      assert.deepEqual(
        p.passed().map((frame) => frame.op),
        [OP.searchResultEntry, OP.searchResultDone],
      );
      p.guard.stream.write(searchRequest(4));
      await until(() => p.received().length === 2 * searchRequest(4).length);
      p.directory.write(bindResponse(4, 0));
      await assert.rejects(p.guard.ended, { message: 'protocolOp 0x61 in answer to 0x63' });
    } finally {
      await p.close();
    }
  });

  test('a forgery in the same read as a genuine answer voids both: neither reaches ldapts', async () => {
    const p = await pair();
    try {
      p.guard.stream.write(searchRequest(3));
      await until(() => p.received().length > 0);
      p.directory.write(Buffer.concat([searchResultDone(3, 0), bindResponse(4, 0)]));
      await assert.rejects(p.guard.ended, {
        message: 'an answer for message id 4 before that request was sent',
      });
      assert.deepEqual(p.passed(), []);
    } finally {
      await p.close();
    }
  });

  test('a Notice of Disconnection is upstream_unavailable', async () => {
    const p = await pair();
    try {
      p.guard.stream.write(bindRequest(2));
      await until(() => p.received().length > 0);
      p.directory.write(noticeOfDisconnection());
      await assert.rejects(p.guard.ended, { message: 'Notice of Disconnection (LDAP result 52)' });
      assert.equal(p.guard.failure()?.failure, 'upstream_unavailable');
    } finally {
      await p.close();
    }
  });

  test('a request of our own takes the next id, and its answers, vetted, come to us and not to ldapts', async () => {
    const p = await pair();
    try {
      p.guard.stream.write(bindRequest(2));
      await until(() => p.received().length > 0);
      p.directory.write(bindResponse(2, 0));
      await until(() => p.passed().length === 1);
      const ours: number[] = [];
      p.guard.send(searchRequest, (_frame, op) => ours.push(op.tag));
      await until(() => p.received().length > bindRequest(2).length);
      assert.deepEqual(new FrameSplitter().push(p.received()).at(-1)?.id, 3);
      p.directory.write(Buffer.concat([searchResultEntry(3, 'uid=a,dc=x'), searchResultDone(3, 0)]));
      await until(() => ours.length === 2);
      assert.deepEqual(ours, [OP.searchResultEntry, OP.searchResultDone]);
      assert.equal(p.passed().length, 1, 'ldapts saw none of them');
      // Done is done for our requests too.
      p.directory.write(searchResultDone(3, 0));
      await assert.rejects(p.guard.ended, { message: 'an answer for message id 3, which awaits none' });
    } finally {
      await p.close();
    }
  });

  test('ldapts reusing the id of a request of ours still in flight ends the connection', async () => {
    const p = await pair();
    try {
      p.guard.send(searchRequest, () => undefined);
      p.guard.stream.write(searchRequest(1));
      await assert.rejects(p.guard.ended, { message: 'our own request: message id 1 is in flight' });
    } finally {
      await p.close();
    }
  });

  test('close() sends an UnbindRequest after the last id and closes the socket', async () => {
    const p = await pair();
    try {
      p.guard.stream.write(bindRequest(2));
      await until(() => p.received().length > 0);
      p.directory.write(bindResponse(2, 0));
      await until(() => p.passed().length === 1);
      const ended = once(p.directory, 'end');
      await p.guard.close();
      await ended;
      assert.deepEqual(
        new FrameSplitter().push(p.received()).map((frame) => [frame.id, frame.op]),
        [
          [2, OP.bindRequest],
          [3, OP.unbindRequest],
        ],
      );
      assert.equal(p.guard.failure(), null);
    } finally {
      await p.close();
    }
  });
});
