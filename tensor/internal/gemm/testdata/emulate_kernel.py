#!/usr/bin/env python3
"""Check an assembly micro-kernel of package gemm by emulating its machine code.

The development machines have no AVX-512, so sgemmKernelAVX512 cannot run
there. This script takes GNU objdump's disassembly of a kernel (decoded from
the bytes the Go assembler emitted, so encoding mistakes such as a wrong
compressed displacement show up), interprets the few instructions the kernels
use, and compares the tile it writes with a float64 reference for several kc
(the unrolled loop and its tail), alpha/beta (beta = 0 must not read C) and
padded ldc (the padding must stay untouched). The AVX2 kernels, which do run
here, go through it too as a check of the emulator.

TestEmulatedKernels runs it on the running test binary when python3 and
objdump are installed; go test strips symbols, so the test passes the
kernels' entry addresses (from kernelAddrs):

  python3 testdata/emulate_kernel.py BINARY NAME:ADDRESS:MR:NR:ELEMSIZE[:direct|:directT|:directB]...

(":direct": the kernel's direct form, which reads row i of A at a + i*lda;
":directT": the transposed direct form, which reads the values of step p at
a + p*lda; ":directB": the direct form reading row p of B at b + p*ldb too.)

Needs only python3 and binutils (objdump).
"""
import random
import re
import struct
import subprocess
import sys

GPR64 = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp"] + [f"r{i}" for i in range(8, 16)]
GPR32 = {"eax": "rax", "ebx": "rbx", "ecx": "rcx", "edx": "rdx", "esi": "rsi", "edi": "rdi"}
GPR32.update({f"r{i}d": f"r{i}" for i in range(8, 16)})

SP, A, B, C, BIAS = 0x1000, 0x10000, 0x40000, 0x70000, 0x98000
MEMSIZE = 0xA0000


def disassemble(binary, addr):
    """Returns the instructions of the function at addr, up to its padding."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={addr:#x}",
                          f"--stop-address={addr + 0x4000:#x}", binary],
                         check=True, capture_output=True, text=True).stdout
    code = []
    for line in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if not m:
            continue
        if m.group(2) in ("int3", "(bad)") or (code and line.rstrip().endswith(">:")):
            break
        ops = re.sub(r"<[^>]*>", "", m.group(3)).strip()
        args = [a.strip() for a in re.split(r",(?![^(]*\))", ops)] if ops else []
        code.append((int(m.group(1), 16), m.group(2), args))
    if not code or (code[0][1], code[0][2]) not in (("mov", ["0x8(%rsp)", "%rcx"]), ("push", ["%rbp"])):
        sys.exit(f"no kernel prologue at {addr:#x} (is the binary position-dependent?)")
    return code


class Machine:
    def __init__(self, elem):
        self.elem = elem
        self.fmt = "f" if elem == 4 else "d"
        self.mem = bytearray(MEMSIZE)
        self.gpr = {r: 0 for r in GPR64}
        self.vec = {i: [0.0] * (64 // elem) for i in range(32)}  # zmm registers as lanes
        self.flags = 0  # last integer result, exact (for ZF and signed compares)
        self.mxcsr = 0x1F80  # the default: all exceptions masked, round to nearest
        self.fma_flush = set()  # MXCSR's FTZ and DAZ bits at each multiply-add
        self.reads, self.writes = set(), set()

    def rnd(self, x):
        return struct.unpack(self.fmt, struct.pack(self.fmt, x))[0]

    def get(self, addr):
        self.reads.add(addr)
        return struct.unpack_from(self.fmt, self.mem, addr)[0]

    def put(self, addr, v):
        self.writes.add(addr)
        struct.pack_into(self.fmt, self.mem, addr, v)

    def addr(self, op):
        m = re.match(r"(-?0x[0-9a-f]+|-?\d+)?\((%\w+)?(?:,(%\w+),(\d))?\)$", op)
        if not m:
            raise RuntimeError(f"bad memory operand {op}")
        disp = int(m.group(1), 0) if m.group(1) else 0
        base = self.gpr[m.group(2)[1:]] if m.group(2) else 0
        idx = self.gpr[m.group(3)[1:]] * int(m.group(4)) if m.group(3) else 0
        return disp + base + idx

    def lanes(self, reg):
        return int(reg[4:]), {"x": 16, "y": 32, "z": 64}[reg[1]] // self.elem

    def src(self, op, n):
        if op.startswith("%"):
            return self.vec[self.lanes(op)[0]][:n]
        a = self.addr(op)
        return [self.get(a + k * self.elem) for k in range(n)]

    def setvec(self, reg, vals):
        r, n = self.lanes(reg)
        self.vec[r] = list(vals[:n]) + [0.0] * (64 // self.elem - n)  # VEX/EVEX zero the upper lanes

    def igpr(self, op):
        if op.startswith("$"):
            return int(op[1:], 0)
        name = op[1:]
        if name in GPR32:
            return self.gpr[GPR32[name]] & 0xFFFFFFFF
        return self.gpr[name]

    def setgpr(self, op, v):
        name = op[1:]
        if name in GPR32:
            self.gpr[GPR32[name]] = v & 0xFFFFFFFF
        else:
            self.gpr[name] = v & 0xFFFFFFFFFFFFFFFF

    def run(self, code):
        pc = {addr: i for i, (addr, _, _) in enumerate(code)}
        i = 0
        for _ in range(10_000_000):
            addr, mn, args = code[i]
            i += 1
            if mn == "mov" and "(" in args[1]:  # a store to the stack frame
                s, d = args
                size = 4 if s[1:] in GPR32 else 8
                a = self.addr(d)
                self.mem[a:a + size] = self.igpr(s).to_bytes(size, "little")
            elif mn == "push":
                self.gpr["rsp"] -= 8
                self.mem[self.gpr["rsp"]:self.gpr["rsp"] + 8] = self.igpr(args[0]).to_bytes(8, "little")
            elif mn == "pop":
                self.setgpr(args[0], int.from_bytes(self.mem[self.gpr["rsp"]:self.gpr["rsp"] + 8], "little"))
                self.gpr["rsp"] += 8
            elif mn == "stmxcsr":
                a = self.addr(args[0])
                self.mem[a:a + 4] = self.mxcsr.to_bytes(4, "little")
            elif mn == "ldmxcsr":
                a = self.addr(args[0])
                self.mxcsr = int.from_bytes(self.mem[a:a + 4], "little")
            elif mn == "mov":
                s, d = args
                if "(" in s:
                    size = 4 if d[1:] in GPR32 else 8
                    a = self.addr(s)
                    self.reads.add(a)
                    self.setgpr(d, int.from_bytes(self.mem[a:a + size], "little"))
                else:
                    self.setgpr(d, self.igpr(s))
            elif mn in ("shl", "add", "sub", "cmp", "test", "or"):
                s, d = args if len(args) == 2 else ("$1", args[0])  # shl %r: by one
                x, y = self.igpr(d), self.igpr(s)
                bits = 32 if d[1:] in GPR32 else 64
                r = {"shl": lambda: (x << y) & ((1 << bits) - 1), "add": lambda: x + y,
                     "sub": lambda: x - y, "cmp": lambda: x - y, "test": lambda: x & y, "or": lambda: x | y}[mn]()
                if mn in ("shl", "add", "sub", "or"):
                    self.setgpr(d, r)
                self.flags = r
            elif mn == "lea":
                s, d = args
                self.setgpr(d, self.addr(s))
            elif mn == "dec":
                r = self.igpr(args[0]) - 1
                self.setgpr(args[0], r)
                self.flags = r
            elif mn in ("jl", "jge", "je", "jne", "jmp"):
                if {"jl": self.flags < 0, "jge": self.flags >= 0, "je": self.flags == 0,
                        "jne": self.flags != 0, "jmp": True}[mn]:
                    i = pc[int(args[0], 16)]
            elif mn in ("prefetcht0", "vzeroupper"):
                pass
            elif mn == "ret":
                return
            elif mn in ("vpxord", "vxorps", "vxorpd"):
                if len(set(args)) != 1:
                    raise RuntimeError("only zeroing xor is supported")
                self.setvec(args[2], [0.0] * 16)
            elif mn in ("vmovups", "vmovupd"):
                s, d = args
                if d.startswith("%"):
                    self.setvec(d, self.src(s, self.lanes(d)[1]))
                else:
                    r, n = self.lanes(s)
                    a = self.addr(d)
                    for k in range(n):
                        self.put(a + k * self.elem, self.vec[r][k])
            elif mn in ("vbroadcastss", "vbroadcastsd"):
                s, d = args
                if s.startswith("%"):
                    raise RuntimeError("register broadcast not supported")
                self.setvec(d, self.src(s, 1) * self.lanes(d)[1])
            elif mn in ("vfmadd231ps", "vfmadd231pd", "vmulps", "vmulpd"):
                s2, s1, d = args  # AT&T order: d = s1*s2 (+ d)
                r, n = self.lanes(d)
                x, y, acc = self.src(s2, n), self.src(s1, n), self.vec[r]
                fma = mn.startswith("vfmadd")
                self.fma_flush.add(self.mxcsr & 0x8040)
                self.setvec(d, [self.rnd(y[k] * x[k] + (acc[k] if fma else 0.0)) for k in range(n)])
            elif mn in ("vaddps", "vaddpd"):
                s2, s1, d = args
                n = self.lanes(d)[1]
                x, y = self.src(s2, n), self.src(s1, n)
                self.setvec(d, [self.rnd(y[k] + x[k]) for k in range(n)])
            else:
                raise RuntimeError(f"unsupported instruction at {addr:#x}: {mn} {args}")
        raise RuntimeError("runaway loop")


def trial(code, mr, nr, elem, kc, alpha, beta, ldc, rng, lda=None, with_bias=False, trans=False, ldb=None):
    """Runs one call; lda (direct forms) lays row i of A out at i*lda, or with trans
    step p at p*lda; else A is a packed panel.
    with_bias passes a bias of nr values (then C = alpha*A*B + bias, C not read)."""
    m = Machine(elem)
    a = [m.rnd(rng.uniform(-1, 1)) for _ in range(kc * mr if lda is None else (kc + 8) * lda if trans else mr * lda)]
    b = [m.rnd(rng.uniform(-1, 1)) for _ in range(kc * (nr if ldb is None else ldb))]
    c = [m.rnd(rng.uniform(-1, 1)) for _ in range(mr * ldc)]
    for base, vals in ((A, a), (B, b), (C, c)):
        for i, v in enumerate(vals):
            struct.pack_into(m.fmt, m.mem, base + i * elem, v)
    # ABI0: return address at 0(SP); kc, a, b, c, ldc from 8(SP) (direct
    # form: kc, a, lda, b, c, ldc); then alpha, beta.
    ints = (kc, A, B, C, ldc) if lda is None else (kc, A, lda, B, C, ldc) if ldb is None else (kc, A, lda, B, ldb, C, ldc)
    for i, v in enumerate(ints):
        struct.pack_into("<q", m.mem, SP + 8 + 8 * i, v)
    struct.pack_into(m.fmt, m.mem, SP + 8 + 8 * len(ints), alpha)
    struct.pack_into(m.fmt, m.mem, SP + 8 + 8 * len(ints) + elem, beta)
    bias = [m.rnd(rng.uniform(-1, 1)) for _ in range(nr)] if with_bias else None
    for j, v in enumerate(bias or []):
        struct.pack_into(m.fmt, m.mem, BIAS + j * elem, v)
    struct.pack_into("<q", m.mem, SP + ((8 + 8 * len(ints) + 2 * elem + 7) & ~7), BIAS if with_bias else 0)
    m.gpr["rsp"] = SP
    m.run(code)
    if m.gpr["rsp"] != SP or m.mxcsr != 0x1F80:  # at the ret, SP points at the return address again
        raise RuntimeError(f"returned with SP {m.gpr['rsp']:#x} (want {SP:#x}) and MXCSR {m.mxcsr:#x} (want the caller's, 0x1f80)")
    if elem == 4 and kc > 0 and m.fma_flush != {0x8040}:
        raise RuntimeError(f"multiply-adds ran with MXCSR FTZ/DAZ bits {sorted(m.fma_flush)}, want 0x8040 (denormals flushed)")
    eps = 2.0**-24 if elem == 4 else 2.0**-53
    worst = 0.0
    for i in range(mr):
        for j in range(ldc):
            addr = C + (i * ldc + j) * elem
            got = struct.unpack_from(m.fmt, m.mem, addr)[0]
            if j >= nr:
                if addr in m.writes:
                    raise RuntimeError(f"kc={kc}: wrote padding C[{i}][{j}]")
                continue
            prods = [a[p * mr + i if lda is None else p * lda + i if trans else i * lda + p] * b[p * (nr if ldb is None else ldb) + j] for p in range(kc)]
            cij = c[i * ldc + j] if beta != 0 else 0.0
            if bias:
                cij, beta_ = bias[j], 1.0
            else:
                beta_ = beta
            want = alpha * sum(prods) + beta_ * cij
            bound = (kc + 2) * eps * (abs(alpha) * sum(map(abs, prods)) + abs(beta_ * cij)) + 1e-300
            worst = max(worst, abs(got - want) / bound)
            if abs(got - want) > 2 * bound:
                raise RuntimeError(f"kc={kc} alpha={alpha} beta={beta}: C[{i}][{j}] = {got}, want {want}")
    read_c = any(C <= r < C + mr * ldc * elem for r in m.reads)
    if (beta == 0 or with_bias) == read_c:
        raise RuntimeError(f"beta={beta} bias={with_bias}: C read = {read_c}")
    if any(not (C <= w < C + mr * ldc * elem) for w in m.writes):
        raise RuntimeError("store outside C")
    return worst


def main():
    binary = sys.argv[1]
    for arg in sys.argv[2:]:
        name, addr, mr, nr, elem, *form = arg.split(":")
        addr, mr, nr, elem = int(addr, 0), int(mr), int(nr), int(elem)
        direct, trans, bdirect = form in (["direct"], ["directT"], ["directB"]), form == ["directT"], form == ["directB"]
        code = disassemble(binary, addr)
        rng = random.Random(1)
        n, worst = 0, 0.0
        for kc in (0, 1, 3, 4, 5, 8, 9):
            for alpha, beta in ((1.0, 0.0), (-0.5, 0.0), (1.0, 1.0), (0.75, -1.5), (2.0, -0.0)):
                for ldc in (nr, nr + 3):
                    lda = kc + ldc - nr + 2 if direct else None  # rows longer than kc
                    if trans:
                        lda = mr + ldc - nr + 3  # steps longer than mr
                    ldb = nr + ldc - nr + 5 if bdirect else None  # rows of B longer than nr
                    for with_bias in (False, True):
                        worst = max(worst, trial(code, mr, nr, elem, kc, alpha, beta, ldc, rng, lda, with_bias, trans, ldb))
                        n += 1
        print(f"{name}: {len(code)} instructions, {n} emulated calls match the reference "
              f"(worst error {worst:.3f} of the bound)")


if __name__ == "__main__":
    main()
