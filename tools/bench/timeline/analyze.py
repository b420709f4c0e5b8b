#!/usr/bin/env python3
"""Summarizes ptxdsl-timeline outputs: µs from the first CTA's entry, over the row step's CTAs.

    analyze.py FILE...

Per CTA: its entry, the start and length of its first trip of the row loop (the first row's
wait), its steady trips (all but the first two and the last), its last trip, the loop's end,
the partial rows' writing (loop end to ret) and ret; then the column reduce's start and end.
"""
import sys, statistics as st
for path in sys.argv[1:]:
    rows, reds = [], []
    for line in open(path):
        f = line.split()
        if f[0] == 'row':
            v = list(map(int, f[2:]))
            rows.append(v)
        elif f[0] == 'red':
            reds.append((int(f[2]), int(f[3])))
    t0 = min(r[0] for r in rows)
    us = lambda t: (t - t0) / 1000
    entry = [us(r[0]) for r in rows]
    loopend = [us(r[2]) for r in rows]
    ret = [us(r[3]) for r in rows]
    trips = [[us(t) for t in r[4:] if t] for r in rows]
    first_trip = [t[1] - t[0] if len(t) > 1 else float('nan') for t in trips]
    # steady trips: differences between consecutive trip starts, excluding the first two and last
    steady = [b - a for t in trips for a, b in zip(t[2:-2], t[3:-1])]
    last_trip = [le - t[-1] for le, t in zip(loopend, trips)]
    write = [r - l for r, l in zip(ret, loopend)]
    print(f'== {path.split("/")[-1]}: {len(rows)} CTAs, trips {min(map(len,trips))}-{max(map(len,trips))}')
    q = lambda xs: f'min {min(xs):7.2f} med {st.median(xs):7.2f} max {max(xs):7.2f}'
    print('  entry         ', q(entry))
    print('  first trip    ', q([t[0] for t in trips]), ' (start of trip 0)')
    print('  trip0 length  ', q(first_trip))
    print('  steady trip   ', q(steady))
    print('  last trip     ', q(last_trip))
    print('  loop end      ', q(loopend))
    print('  partials write', q(write))
    print('  ret           ', q(ret))
    if reds:
        rs = [us(a) for a, b in reds]; re_ = [us(b) for a, b in reds]
        print('  reduce start  ', q(rs))
        print('  reduce end    ', q(re_))
        print(f'  total {max(re_):.2f} µs; row step {max(ret):.2f}; gap to reduce {min(rs)-max(ret):.2f}; reduce {max(re_)-min(rs):.2f}')
