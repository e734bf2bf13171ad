#!/usr/bin/env python3
"""Writes the seed corpus of commit_semantic_fuzzer (input format: see
server/tests/commit_semantic_fuzzer.cc and semfuzz_runner.cc Runner::Op).

usage: semfuzz_seeds.py OUT_DIR   (tests/fuzz/corpus/commit_semantic_fuzzer)
"""
import os
import struct
import sys


def put(c, key, len_byte, seed=1, cond=0):
    return bytes([0 | c << 3, key, len_byte, seed, cond])


def delete(c, key, cond=0):
    return bytes([1 | c << 3, key, cond])


def fuzz(c, subject=3, ids=0, off_mode=0, off_arg=0, len_mode=0, len_arg=0,
         hash_mode=0, opcond=0, expected=0):
    return (bytes([2 | c << 3, subject, ids, off_mode]) +
            struct.pack('<Q', off_arg) + bytes([len_mode]) +
            struct.pack('<I', len_arg) + bytes([hash_mode, opcond]) +
            struct.pack('<Q', expected))


def refill(c, for_delete=0):
    return bytes([3 | c << 3, for_delete])


def info(c, topic):
    return bytes([4 | c << 3, topic])


def bye(c):
    return bytes([5 | c << 3])


def vanish(c):
    return bytes([6 | c << 3])


def write_only(c, key, len_byte):
    return bytes([7 | c << 3, key, len_byte])


SEEDS = {
    'put': [put(0, 0, 10)],
    'put_delete': [put(0, 0, 10), put(1, 1, 20), delete(0, 0), info(2, 0)],
    'put_update_conditional': [put(0, 2, 5), put(1, 2, 7, cond=2),
                               put(0, 2, 9, cond=1), delete(1, 2, cond=2)],
    'fill_refill': [put(0, 6, 255), put(0, 1, 30), refill(1, 1),
                    put(1, 3, 40), info(1, 3)],
    'bye_reuse': [put(0, 0, 10), bye(0), put(1, 1, 10), put(0, 2, 10),
                  vanish(1), put(1, 0, 3)],
    # COMMIT at offset 2^64 - 64 with length 128: the sum wraps to 64.
    'wrap_offset': [put(0, 0, 10),
                    fuzz(0, subject=3, off_mode=2, off_arg=0, len_mode=4,
                         len_arg=1, hash_mode=2),
                    bye(0), put(1, 1, 10)],
    # Another connection's uncommitted record as the target.
    'other_pending': [write_only(0, 3, 20),
                      fuzz(1, subject=1, off_mode=0, len_mode=0)],
    'bad_op': [put(0, 0, 1), fuzz(0, subject=0, opcond=0x7c), put(0, 1, 1)],
}


# Byte 0 of every seed: 0 (group commit, 8 KiB segments), except these.
CONFIG = {'fill_log_large': 2}
# 64 KiB segments: fill the log record by record (each put fills the rest
# of its grant), then deletes through the reserve segment.
SEEDS['fill_log_large'] = ([put(0, i % 6, 255) for i in range(20)] +
                           [delete(0, 1), refill(0, 1), delete(0, 2),
                            put(1, 3, 1), delete(1, 4)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, ops in SEEDS.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(bytes([CONFIG.get(name, 0)]) + b''.join(ops))


if __name__ == '__main__':
    main()
