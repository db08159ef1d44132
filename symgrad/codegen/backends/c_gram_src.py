"""The C source of the Gram kernel ``H = Xᵀ diag(w) X`` (X an (N, d) array of any
strides, w N weights or none), which ``c_gram`` builds once per machine.

Why not BLAS: NumPy computes ``Yᵀ @ Y`` with OpenBLAS's ``syrk``, which at the shapes of
second derivatives (N in the thousands, d in the tens) runs at about a fifth of this CPU's
peak, after a pass that writes the weighted copy ``Y = X * sqrt(w)[:, None]``; with
weights of either sign NumPy has no symmetric product at all (``gemm``, twice the work).

The algorithm is a register-tiled product restricted to the upper triangle, in lanes of
L doubles (L = 8 with AVX-512, 4 with AVX2, 2 in the portable path: GCC/Clang vector
extensions, which become SSE2 or NEON). Rows are split into panels of L (the last one
holds the r = d mod L trailing rows), columns into vectors of L. For each block of KC
rows of X:

* a tile is ``rows`` rows of one panel by ``width`` consecutive column vectors; its
  accumulators stay in registers over the block's rows k, each step one broadcast of
  X[k][i] times ``width`` vectors X[k][j..] (times w[k], one multiply per vector);
* the tiles walk groups of ``width`` column vectors, and within a group every row panel
  up to the diagonal, so the group's part of the block is read from memory once and
  from L1 by the other panels; full panels compute column vectors from their own
  diagonal on, the trailing panel computes its r rows over every column, so the last,
  partial column vector costs r rows instead of a mostly padded vector for every row;
* X is read in place when its columns are contiguous (the last vector with a masked
  load) and copied, zero padded, block by block otherwise.

The tiles accumulate in H itself (the trailing columns of a row through masked loads and
stores); a final pass copies the upper triangle into the lower one (the trailing rows the
other way), so H is exactly symmetric.

Dispatch is at run time (``__builtin_cpu_supports``, which also checks that the OS saves
the wide registers): the functions of each instruction set carry their own ``target``
attribute, so the module is built with the C backend's portable flags and a module
cached on one x86-64 CPU runs on any other. The text is a pure function of this file, so
the disk cache's key (source and flags) identifies it.
"""

KC = 128     # rows of X per block: for d = 50 a column group's share of a block stays in L1
UNROLL = 2   # rows k per iteration of a tile's loop


class Isa:
    """One instruction set: ``lanes`` doubles per vector, tiles of up to ``lanes`` rows by
    ``width`` vectors (their accumulators, the vectors, a broadcast and the weight fill the
    registers without spilling), the ``target`` attribute of its functions, and a masked
    load of the ``r`` leading doubles of a vector (zeros in the other lanes) and store of
    the ``r`` leading lanes of ``{x}``."""

    def __init__(self, name, lanes, width, target, tail, store, x86):
        self.name, self.lanes, self.width, self.target, self.tail, self.store, self.x86 = (
            name, lanes, width, target, tail, store, x86)

    @property
    def attr(self):
        return f'__attribute__((target("{self.target}"))) ' if self.target else ""

    @property
    def vec(self):
        return f"sg_v{self.lanes}"


ISAS = (
    Isa("base", 2, 3, None, "(sg_v2){(p)[0], 0.0}", "(p)[0] = {x}[0]", False),
    Isa("avx2", 4, 3, "avx2,fma",
        "(sg_v4)_mm256_maskload_pd((p), _mm256_loadu_si256((const __m256i *)sg_tail4[r]))",
        "_mm256_maskstore_pd((p), _mm256_loadu_si256((const __m256i *)sg_tail4[r]), "
        "(__m256d){x})", True),
    Isa("avx512", 8, 3, "avx512f,fma",
        "(sg_v8)_mm512_maskz_loadu_pd((__mmask8)((1u << (r)) - 1), (p))",
        "_mm512_mask_storeu_pd((p), (__mmask8)((1u << (r)) - 1), (__m512d){x})", True),
)

HEADER = r"""#include <stdlib.h>
#include <string.h>
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__clang__) || __GNUC__ >= 6) \
    && !defined(SG_PORTABLE)
#define SG_X86 1
#include <immintrin.h>
static const long long sg_tail4[4][4] = {
    {0, 0, 0, 0}, {-1, 0, 0, 0}, {-1, -1, 0, 0}, {-1, -1, -1, 0}};
#endif
typedef double sg_v2 __attribute__((vector_size(16)));
typedef double sg_v4 __attribute__((vector_size(32)));
typedef double sg_v8 __attribute__((vector_size(64)));
typedef double sg_u2 __attribute__((vector_size(16), aligned(8)));
typedef double sg_u4 __attribute__((vector_size(32), aligned(8)));
typedef double sg_u8 __attribute__((vector_size(64), aligned(8)));
typedef void (*sg_tile_t)(const double *, long, const double *, long, const double *, long,
                          double *, long, int);
typedef void (*sg_tail_t)(const double *, long, const double *, long, const double *, long,
                          double *, long, int, long);

static double *sg_alloc(long doubles) {
    void *p = NULL;
    if (posix_memalign(&p, 64, (size_t)(doubles > 0 ? doubles : 1) * sizeof(double)))
        return NULL;
    return (double *)p;
}

/* The lower triangle from the upper one in place: entries of full panels' rows are in
   the upper triangle for columns j < split, the trailing rows' in the lower one. */
static void sg_mirror(double *h, long d, long split) {
    for (long i0 = 0; i0 < split; i0 += 32)
        for (long j0 = i0; j0 < split; j0 += 32) {
            const long ie = i0 + 32 < split ? i0 + 32 : split;
            const long je = j0 + 32 < split ? j0 + 32 : split;
            for (long i = i0; i < ie; i++)
                for (long j = j0 > i ? j0 : i + 1; j < je; j++)
                    h[j * d + i] = h[i * d + j];
        }
    for (long j = split; j < d; j++)
        for (long i = 0; i < j; i++)
            h[i * d + j] = h[j * d + i];
}
"""


def tile(isa, rows, width, masked=False):
    """C of the tile of ``rows`` rows by ``width`` column vectors: ``c`` (row stride
    ``ldc``) += Σ_k a[k][r] w[k] b[k][t] (w[k] = 1 when ``w`` is NULL), a and b rows
    ``lda``, ``ldb`` apart; ``first`` starts from zero. ``masked``: one vector of which
    only the ``r`` leading doubles exist (the trailing columns of X)."""
    v, L = isa.vec, isa.lanes
    acc = [[f"c{r}_{t}" for t in range(width)] for r in range(rows)]
    name = f"sg_{'tail' if masked else 'tile'}_{isa.name}_{rows}" + ("" if masked else f"_{width}")
    out = [f"{isa.attr}static void {name}(const double *restrict a, long lda, "
           "const double *restrict b, long ldb, const double *restrict w, long kc, "
           "double *restrict c, long ldc, int first" + (", long r" if masked else "") + ") {"]
    out.append(f"    {v} {', '.join(x for row in acc for x in row)};")
    out.append("    if (first) {")
    out += [f"        {x} = ({v}){{0}};" for row in acc for x in row]
    out.append("    } else {")
    out += ["    " + line for line in _accumulators(isa, acc, masked, load=True)]
    out.append("    }")

    def step(k, weighted):
        scale = f" * w[{k}]" if weighted else ""
        if masked:
            lines = [f"        const double *p = b + ({k}) * ldb;",
                     f"        {v} v0 = {isa.tail}{scale};"]
        else:
            lines = [f"        {v} v{t} = *(const sg_u{L} *)(b + ({k}) * ldb + {t * L}){scale};"
                     for t in range(width)]
        for r in range(rows):
            fmas = " ".join(f"{acc[r][t]} += s * v{t};" for t in range(width))
            lines.append(f"        {{ const double s = a[({k}) * lda + {r}]; {fmas} }}")
        return lines

    for weighted in (True, False):
        out.append("    if (w) {" if weighted else "    } else {")
        out.append("    long k = 0;")
        out.append(f"    for (; k + {UNROLL} <= kc; k += {UNROLL}) {{")
        for j in range(UNROLL):
            out += ["      {"] + step(f"k + {j}", weighted) + ["      }"]
        out.append("    }")
        out.append("    for (; k < kc; k++) {")
        out += step("k", weighted)
        out.append("    }")
    out.append("    }")
    out += _accumulators(isa, acc, masked, load=False)
    out.append("}")
    return "\n".join(out)


def _accumulators(isa, acc, masked, load):
    """Lines loading the accumulators ``acc`` (rows of names) from the tile of H at ``c``
    or storing them there; ``masked``: only the ``r`` leading columns exist."""
    lines = []
    for r, row in enumerate(acc):
        for t, x in enumerate(row):
            at = f"c + {r} * ldc + {t * isa.lanes}"
            if masked:
                lines.append(f"    {{ double *p = {at}; " + (f"{x} = {isa.tail}; }}" if load
                             else f"{isa.store.format(x=x)}; }}"))
            else:
                lines.append(f"    {x} = *(const sg_u{isa.lanes} *)({at});" if load else
                             f"    *(sg_u{isa.lanes} *)({at}) = {x};")
    return lines


def driver(isa):
    """C of ``sg_gram_<isa>``: blocks of ``kcmax`` rows of X, each swept by the tiles, the
    tiles of a group of column vectors one after the other (so that the group's part of
    the block stays in L1 while every row panel reads it)."""
    L, n, wide = isa.lanes, isa.name, isa.width
    table = ", ".join("{" + ", ".join(f"sg_tile_{n}_{r}_{w}" for w in range(1, wide + 1)) + "}"
                      for r in range(1, L + 1))
    tails = ", ".join(f"sg_tail_{n}_{r}" for r in range(1, L))
    return f"""static const sg_tile_t sg_tiles_{n}[{L}][{wide}] = {{{table}}};
static const sg_tail_t sg_tails_{n}[{L - 1}] = {{{tails}}};

{isa.attr}static void sg_pack_{n}(const double *restrict x, long rs, long cs, long kc, long d,
                                  long dp, double *restrict P) {{
    for (long k = 0; k < kc; k++) {{
        for (long j = 0; j < d; j++)
            P[k * dp + j] = x[k * rs + j * cs];
        for (long j = d; j < dp; j++)
            P[k * dp + j] = 0.0;
    }}
}}

static int sg_gram_{n}(const double *x, long rs, long cs, const double *w, long n, long d,
                       double *h, long kcmax) {{
    const long L = {L}, nv = (d + L - 1) / L, nf = d / L, r = d % L, dp = nv * L;
    const long kb = n < kcmax ? n : kcmax;
    double *B = cs != 1 ? sg_alloc(kb * dp) : NULL;
    int failed = cs != 1 && !B;
    for (long k0 = 0; k0 < n && !failed; k0 += kb) {{
        const long kc = n - k0 < kb ? n - k0 : kb;
        const double *b = x + k0 * rs, *wk = w ? w + k0 : NULL;
        long ldb = rs;
        const int first = k0 == 0;
        if (B) {{
            sg_pack_{n}(b, rs, cs, kc, d, dp, B);
            b = B;
            ldb = dp;
        }}
        for (long q0 = 0; q0 < nf; q0 += {wide}) {{
            const long q1 = nf - q0 < {wide} ? nf : q0 + {wide};
            for (long p = 0; p < q1; p++) {{
                const long q = p > q0 ? p : q0;
                sg_tiles_{n}[L - 1][q1 - q - 1](b + p * L, ldb, b + q * L, ldb, wk, kc,
                                               h + p * L * d + q * L, d, first);
            }}
            if (r)
                sg_tiles_{n}[r - 1][q1 - q0 - 1](b + nf * L, ldb, b + q0 * L, ldb, wk, kc,
                                                h + nf * L * d + q0 * L, d, first);
        }}
        if (r)
            sg_tails_{n}[r - 1](b + nf * L, ldb, b + nf * L, ldb, wk, kc,
                                h + nf * L * d + nf * L, d, first, r);
    }}
    if (!failed)
        sg_mirror(h, d, nf * L);
    free(B);
    return failed ? -1 : 0;
}}
"""


FOOTER = r"""
int sg_gram_isa(void) {
    static int best = -1;        /* a race only computes it twice */
    if (best < 0) {
        int found = 0;
#ifdef SG_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f"))
            found = 2;
        else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            found = 1;
#endif
        best = found;
    }
    return best;
}

int sg_gram(const double *x, long rs, long cs, const double *w, long n, long d, double *h,
            long kc, int isa) {
    if (n <= 0 || d <= 0) {
        if (d > 0)
            memset(h, 0, (size_t)(d * d) * sizeof(double));
        return 0;
    }
    if (kc < 1)
        kc = 1;
    if (isa > sg_gram_isa())
        isa = sg_gram_isa();
#ifdef SG_X86
    if (isa == 2)
        return sg_gram_avx512(x, rs, cs, w, n, d, h, kc);
    if (isa == 1)
        return sg_gram_avx2(x, rs, cs, w, n, d, h, kc);
#endif
    return sg_gram_base(x, rs, cs, w, n, d, h, kc);
}
"""

CDEF = """int sg_gram_isa(void);
int sg_gram(const double *x, long rs, long cs, const double *w, long n, long d, double *h,
            long kc, int isa);"""

ISA_LEVELS = {isa.name: level for level, isa in enumerate(ISAS)}


def source(portable=False):
    """The whole C module (deterministic text); ``portable``: without the x86 paths, for a
    toolchain that cannot assemble them."""
    parts = ["#define SG_PORTABLE 1\n" if portable else "", HEADER]
    for isa in ISAS:
        body = [tile(isa, rows, width) for rows in range(1, isa.lanes + 1)
                for width in range(1, isa.width + 1)]
        body += [tile(isa, rows, 1, masked=True) for rows in range(1, isa.lanes)]
        body.append(driver(isa))
        text = "\n\n".join(body)
        parts.append(f"#ifdef SG_X86\n{text}\n#endif" if isa.x86 else text)
    parts.append(FOOTER)
    return "\n\n".join(parts)
