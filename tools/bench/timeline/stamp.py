#!/usr/bin/env python3
"""Adds %globaltimer stamps to a backward module's PTX for ptxdsl-timeline.

    stamp.py IN.ptx ROW_GRID OUT.ptx

Each entry gets a last parameter `tl` (u64 words); thread 0 of each CTA writes:
- row step, 64 words a CTA: 0 entry, 1 %smid, 2 the row loop's end, 3 ret, 4.. each trip of the
  row loop (the loop of the widest span; trips past 59 share the last word);
- column reduce, after the row step's words, 2 a CTA: after griddepcontrol.wait (or its
  parameters), and ret.
"""
import re, sys
SLOTS = 64
src = open(sys.argv[1]).read()
row_grid = int(sys.argv[2])
entries = [m.start() for m in re.finditer(r'^\.visible \.entry', src, re.M)]
parts = [src[:entries[0]]] + [src[a:b] for a, b in zip(entries, entries[1:] + [len(src)])]

def add_param(e):
    return re.sub(r'(\.param \.u32 \w+)\n\)', r'\1,\n\t.param .u64 tl\n)', e, count=1)

def prologue(e, base_expr, smid):
    lines = e.split('\n')
    last = max(i for i, l in enumerate(lines) if 'ld.param' in l or 'griddepcontrol.wait' in l)
    ins = ['\t.reg .u64 %tl<6>;', '\t.reg .u32 %tlr<6>;', '\t.reg .pred %tlp<2>;',
           '\tld.param.u64 %tl0, [tl];', '\tmov.u32 %tlr0, %tid.x;', '\tsetp.eq.u32 %tlp0, %tlr0, 0;',
           '\tmov.u32 %tlr1, %ctaid.x;'] + base_expr + [
           '\tmov.u32 %tlr2, 0;', '\tmov.u64 %tl2, %globaltimer;', '\t@%tlp0 st.global.u64 [%tl0], %tl2;']
    if smid:  # the row step's word 1; the reduce's word 1 is its ret
        ins += ['\tmov.u32 %tlr3, %smid;', '\tcvt.u64.u32 %tl3, %tlr3;', '\t@%tlp0 st.global.u64 [%tl0+8], %tl3;']
    return '\n'.join(lines[:last + 1] + ins + lines[last + 1:])

def stamp(off):
    return f'\tmov.u64 %tl2, %globaltimer;\n\t@%tlp0 st.global.u64 [%tl0+{off}], %tl2;\n'

row = add_param(parts[1])
row = prologue(row, [f'\tmul.wide.u32 %tl1, %tlr1, {SLOTS * 8};', '\tadd.u64 %tl0, %tl0, %tl1;'], True)
trip = ('\tmov.u64 %tl2, %globaltimer;\n\tmin.u32 %tlr4, %tlr2, {m};\n\tmul.wide.u32 %tl3, %tlr4, 8;\n'
        '\tadd.u64 %tl3, %tl3, %tl0;\n\t@%tlp0 st.global.u64 [%tl3+32], %tl2;\n\tadd.u32 %tlr2, %tlr2, 1;\n').format(m=SLOTS - 5)
# The row loop: the loop of the widest span.
spans = []
for m in re.finditer(r'^\$L__loop_(\d+):$', row, re.M):
    n = int(m.group(1))
    end = row.find(f'$L__loop_end_{n + 1}:')
    spans.append((end - m.start(), n))
n = max(spans)[1]
sys.stderr.write(f'row loop: $L__loop_{n}\n')
row = row.replace(f'$L__loop_{n}:\n', f'$L__loop_{n}:\n' + trip, 1)
row = row.replace(f'$L__loop_end_{n + 1}:\n', f'$L__loop_end_{n + 1}:\n' + stamp(16), 1)
row = row.replace('\tret;\n', stamp(24) + '\tret;\n')
out = parts[0] + row
for e in parts[2:]:
    e = add_param(e)
    e = prologue(e, [f'\tmul.wide.u32 %tl1, %tlr1, 16;', '\tadd.u64 %tl0, %tl0, %tl1;',
                     f'\tadd.u64 %tl0, %tl0, {row_grid * SLOTS * 8};'], False)
    e = e.replace('\tret;\n', stamp(8) + '\tret;\n')
    out += e
open(sys.argv[3], 'w').write(out)
