// A counting semaphore with a bounded FIFO queue (contract §5: at most IMAP_MAX_CONCURRENCY attempts
// at once, more wait, a full queue is a failure). Hand-written: p-limit/p-queue have no queue bound
// or wait deadline, and this is twenty lines.

export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
}

export class QueueTimeoutError extends Error {
  override readonly name = 'QueueTimeoutError';
}

interface Waiter {
  grant: () => void;
  timer: NodeJS.Timeout;
}

export class Limiter {
  readonly max: number;
  readonly queueLimit: number;
  #active = 0;
  readonly #queue: Waiter[] = [];

  constructor(max: number, queueLimit: number) {
    this.max = max;
    this.queueLimit = queueLimit;
  }

  get active(): number {
    return this.#active;
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** True when a task now would be refused at once (every slot busy, the queue full). */
  get full(): boolean {
    return this.#active >= this.max && this.#queue.length >= this.queueLimit;
  }

  /** Runs `task` when a slot is free; rejects at once when the queue is full, or after `waitMs` queued. */
  async run<T>(task: () => Promise<T>, waitMs: number): Promise<T> {
    if (this.#active >= this.max) {
      if (this.#queue.length >= this.queueLimit) throw new QueueFullError('IMAP queue full');
      await new Promise<void>((resolve, reject) => {
        const waiter: Waiter = {
          grant: resolve,
          timer: setTimeout(() => {
            this.#queue.splice(this.#queue.indexOf(waiter), 1);
            reject(new QueueTimeoutError('waited too long for an IMAP slot'));
          }, waitMs),
        };
        this.#queue.push(waiter);
      });
    } else {
      this.#active++;
    }
    try {
      return await task();
    } finally {
      const next = this.#queue.shift();
      if (next === undefined) {
        this.#active--;
      } else {
        // The slot passes straight to the next waiter, so `active` never dips and admits a newcomer first.
        clearTimeout(next.timer);
        next.grant();
      }
    }
  }
}
