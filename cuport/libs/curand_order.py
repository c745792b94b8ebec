"""How cuRAND's host library lays a request over its generator states (the "ordering").

Read off the H200 (tests/libs/recorded/curand_host.txt, written by
tests/libs/curand_record.cu) and NVIDIA's host generators, which give the same bits:

- XORWOW and MRG32k3a keep `lanes` persistent states, lane l = subsequence l of the seed
  (4096 lanes for XORWOW; 81920 for MRG32k3a, 4096 under PSEUDO_LEGACY). A request is a
  run of units (an output, or a pair of normals), each made from k consecutive draws of
  one lane, dealt round-robin from a start lane that moves on by the request's unit
  count; every lane continues from where its last unit left it. An offset o is o raw
  outputs already dealt: lane l has made o div lanes draws, one more if l < o mod lanes,
  and the next unit goes to lane o mod lanes. Under XORWOW's PSEUDO_SEEDED ordering the
  4096 lanes are seeded instead (curand_engines.xorwow_seeded), dealt alike.
- Philox4x32-10: output g (counted from the offset over the generator's life) is element
  g mod 4 of group g div 4, made by thread t = group mod 65536 from subsequence t with
  one curand4 block (raw, uniform, normal: Box-Muller on (x, y) and (z, w)) or two
  (doubles: four 53-bit uniforms, or two Box-Muller pairs of four words each). A thread
  moves on by its group's blocks once the group's four outputs are all made (a group a
  call leaves part-made is made again by the next call, from the same counter); an
  offset o is o raw outputs made (o div 4 groups, one block each).
- MTGP32 runs `blocks` blocks (192; 64 under PSEUDO_LEGACY), block b with NVIDIA's
  parameter set b, each making 256 outputs a round; output g is from round
  g div (256 blocks), block (g div 256) mod blocks, position 256 round + g mod 256.
- MT19937's 8192 generators of 8 threads: curand_mt19937.py.
"""

from __future__ import annotations

import numpy as np

from cuport.libs import curand_engines as eng

U32, U64 = np.uint32, np.uint64


class Lanes:
    """Persistent lanes of XORWOW or MRG32k3a (their draws: uint32, or MRG's doubles)."""

    def __init__(self, engine, seed: int, lanes: int, offset: int) -> None:
        base, r0 = divmod(offset, lanes)
        self.lanes = lanes
        self.engine = engine(seed, np.arange(lanes), base)
        self.first = base  # the draw index of self.rows[0] in every lane
        self.rows: np.ndarray | None = None  # (drawn rows, lanes), from `first` on
        self.consumed = np.full(lanes, base, np.int64)
        self.consumed[:r0] += 1
        self.start = r0  # the lane the next unit goes to
        self.held = np.zeros(lanes, bool)  # a lane keeps the second normal of a pair
        self.kept = np.zeros(lanes, np.float32)

    def _rows(self, upto: int) -> np.ndarray:
        """The draws from self.first up to (not including) draw index `upto` of every lane."""
        have = 0 if self.rows is None else self.rows.shape[0]
        need = upto - self.first
        if need > have:
            fresh = self.engine.draw(need - have)
            self.rows = fresh if self.rows is None else np.concatenate([self.rows, fresh])
        return self.rows

    def units(self, count: int, k: int) -> list[np.ndarray]:
        """The next `count` units of k draws each: k arrays (draw j of each unit)."""
        L, start = self.lanes, self.start
        nrows = (start + count + L - 1) // L  # rows of the grid the units fill
        lane = np.arange(L)
        # unit (row r, lane l) takes draws adj[l] + k r ..: lanes before `start` begin a row late
        adj = self.consumed - k * (lane < start)
        rows = self._rows(int(adj.max()) + k * nrows)
        grid = [np.empty((nrows, L), rows.dtype) for _ in range(k)]
        for value in np.unique(adj):
            sel = adj == value
            r0 = 1 if value < self.first else 0  # such a lane's row 0 precedes the request
            for j in range(k):
                first = int(value) - self.first + j + k * r0
                grid[j][r0:, sel] = rows[first:first + k * (nrows - r0):k][:, sel]
        parts = [g.reshape(-1)[start:start + count] for g in grid]
        end = start + count
        made = (end - lane + L - 1) // L - (start - lane + L - 1) // L  # units each lane made
        self.consumed += k * made
        self.start = end % L
        drop = int(self.consumed.min()) - self.first
        if drop > 0:
            self.rows = self.rows[drop:]
            self.first += drop
        return parts


    def single_normals(self, count: int, pairs) -> np.ndarray:
        """The next `count` outputs of one normal each, as curand_normal gives them per lane:
        a pair (pairs(x, y): interleaved normals) from two draws every second output, the
        second of a pair kept in the lane for its next output (curandGeneratePoisson's
        normal approximation)."""
        L, start = self.lanes, self.start
        lane = np.arange(L)
        end = start + count
        made = (end - lane + L - 1) // L - (start - lane + L - 1) // L  # outputs per lane
        held = self.held.astype(np.int64)
        new_pairs = np.maximum(made - held + 1, 0) // 2
        most = int(new_pairs.max())
        seq = np.zeros((int(made.max()) + 1, L), np.float32)
        seq[0, self.held] = self.kept[self.held]
        rows = self._rows(int(self.consumed.max()) + 2 * most)
        for value in np.unique(self.consumed) if most else ():
            sel = self.consumed == value
            first = int(value) - self.first
            d = rows[first:first + 2 * most][:, sel]  # (2 most, lanes here)
            z = pairs(d[0::2].reshape(-1), d[1::2].reshape(-1)).reshape(most, -1, 2)
            z = z.transpose(0, 2, 1).reshape(2 * most, -1)  # per lane: first, second, ...
            for h in (0, 1):
                both = sel & (held == h)
                if both.any():
                    take = min(2 * most, seq.shape[0] - h)
                    seq[h:h + take, both] = z[:take, both[sel]]
        r = (start + np.arange(count)) // L - ((start + np.arange(count)) % L < start)
        out = seq[r, (start + np.arange(count)) % L]
        left = held + 2 * new_pairs - made  # 1 where a pair's second value is left over
        self.held = left == 1
        self.kept = seq[np.minimum(made, seq.shape[0] - 1), lane]
        self.consumed += 2 * new_pairs
        self.start = end % L
        drop = int(self.consumed.min()) - self.first
        if drop > 0:
            self.rows = self.rows[drop:]
            self.first += drop
        return out


PHILOX_THREADS = 65536  # Philox's host grid (the H200's and NVIDIA's host generator's)


class PhiloxOrder:
    """Philox4x32-10's 65536 threads: thread t's next group starts at counter[t]."""

    def __init__(self, seed: int, offset: int) -> None:
        self.seed = seed
        self.position = offset
        q0, r0 = divmod(offset // 4, PHILOX_THREADS)
        self.counter = np.full(PHILOX_THREADS, q0, np.int64)
        self.counter[:r0] += 1

    def take(self, count: int, blocks: int, make) -> np.ndarray:
        """The next `count` outputs; make((groups, 4 blocks) words) -> (groups, 4) values."""
        T = PHILOX_THREADS
        first, last = self.position // 4, (self.position + count - 1) // 4
        groups = np.arange(first, last + 1, dtype=np.int64)
        threads = groups % T
        q0, r0 = divmod(first, T)
        earlier = groups // T - q0 - (threads < r0)  # the call's groups before it on its thread
        base = (self.counter[threads] + blocks * earlier).astype(U64)
        words = []
        for b in range(blocks):
            counter = base + U64(b)
            c = np.zeros((len(groups), 4), U32)
            c[:, 0] = (counter & U64(0xFFFFFFFF)).astype(U32)
            c[:, 1] = (counter >> U64(32)).astype(U32)
            c[:, 2] = threads.astype(U32)
            words.append(eng.philox_blocks(self.seed, c))
        values = make(np.concatenate(words, axis=1))
        skip = self.position - 4 * first
        end = self.position + count
        done = end // 4  # groups before this one are complete: their threads move on
        t = np.arange(T)
        made = (done - t + T - 1) // T - (first - t + T - 1) // T
        self.counter += blocks * np.maximum(made, 0)
        self.position = end
        return values.reshape(-1)[skip:skip + count]


class MtgpOrder:
    """MTGP32's blocks, in rounds of 256 outputs each."""

    def __init__(self, seed: int, blocks: int, position: int = 0) -> None:
        self.seed = seed
        self.blocks = blocks
        self.position = position
        self.cache = None  # (next round, engine, the outputs of the round before it)

    def draws(self, count: int) -> np.ndarray:
        per_round = eng.MTGP_THREADS * self.blocks
        first, last = self.position // per_round, (self.position + count - 1) // per_round
        cached = self.cache
        if cached is not None and cached[0] == first + 1:
            rows, engine, done = [cached[2]], cached[1], first + 1
        elif cached is not None and cached[0] == first:
            rows, engine, done = [], cached[1], first
        else:
            engine = eng.Mtgp32(self.seed, self.blocks)
            if first:
                engine.draw_rounds(first)
            rows, done = [], first
        if last >= done:
            # (blocks, rounds * 256) -> round-major, then block, then thread
            new = engine.draw_rounds(last - done + 1)
            new = new.reshape(self.blocks, -1, eng.MTGP_THREADS).transpose(1, 0, 2)
            rows.extend(new.reshape(-1, per_round))
        flat = np.concatenate(rows)[self.position - first * per_round:][:count]
        self.cache = (last + 1, engine, rows[-1])
        self.position += count
        return flat
