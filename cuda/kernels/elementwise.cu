// elementwise.cu: Fill, Copy (with dtype conversion), Unary, Binary, Where /
// MaskedFill and the AdamW step. Every kernel walks the n elements of a Lay
// with a grid-stride loop; operand pointers already include the tensors'
// offsets. A contiguous operation coalesces to a single dimension, for which
// lay_offsets does no division.

// Unary operations: the values of tensor.UnaryOp.
enum {
    U_NEG, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_SQUARE, U_ABS, U_TANH, U_SIGMOID,
    U_RELU, U_GELU, U_SILU, U_AFFINE, U_CLAMP, U_POW
};

// Binary operations: the values of tensor.BinaryOp.
enum {
    B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_ADDSCALED, B_RELUGRAD,
    B_GELUGRAD, B_SILUGRAD, B_SIGMOIDGRADY, B_TANHGRADY, B_LERP
};

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT2PI 0.39894228040143267794

template <typename T>
__device__ __forceinline__ T sigmoid_(T x) {
    if (x >= T(0)) return T(1) / (T(1) + m_exp(-x));
    T e = m_exp(x);
    return e / (T(1) + e);
}

template <typename T>
__device__ __forceinline__ T gelu_(T x) {
    return T(0.5) * x * (T(1) + m_erf(x * T(INV_SQRT2)));
}

template <typename T>
__device__ __forceinline__ T gelu_grad_(T x) {
    return T(0.5) * (T(1) + m_erf(x * T(INV_SQRT2))) + x * T(INV_SQRT2PI) * m_exp(T(-0.5) * x * x);
}

template <typename T>
__device__ __forceinline__ T unary_op(int op, T x, T p0, T p1) {
    switch (op) {
    case U_NEG: return -x;
    case U_EXP: return m_exp(x);
    case U_LOG: return m_log(x);
    case U_SQRT: return m_sqrt(x);
    case U_RSQRT: return m_rsqrt(x);
    case U_SQUARE: return x * x;
    case U_ABS: return m_abs(x);
    case U_TANH: return m_tanh(x);
    case U_SIGMOID: return sigmoid_(x);
    case U_RELU: return x > T(0) ? x : T(0);
    case U_GELU: return gelu_(x);
    case U_SILU: return x * sigmoid_(x);
    case U_AFFINE: return p0 * x + p1;
    case U_CLAMP: {
        T y = x;
        if (y < p0) y = p0;
        if (y > p1) y = p1;
        return y;
    }
    case U_POW:
        if (p0 == T(2)) return x * x;
        if (p0 == T(0.5)) return m_sqrt(x);
        return m_pow(x, p0);
    }
    return x;
}

template <typename T>
__device__ __forceinline__ T binary_op(int op, T x, T y, T alpha) {
    switch (op) {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    case B_DIV: return x / y;
    case B_MAX:
        if (x != x || y != y) return x + y;
        return x > y ? x : y;
    case B_MIN:
        if (x != x || y != y) return x + y;
        return x < y ? x : y;
    case B_ADDSCALED: return x + alpha * y;
    case B_RELUGRAD: return x > T(0) ? y : T(0);
    case B_GELUGRAD: return y * gelu_grad_(x);
    case B_SILUGRAD: {
        T s = sigmoid_(x);
        return y * s * (T(1) + x * (T(1) - s));
    }
    case B_SIGMOIDGRADY: return y * x * (T(1) - x);
    case B_TANHGRADY: return y * (T(1) - x * x);
    case B_LERP: return x + alpha * (y - x);
    }
    return x;
}

// fill sets every element of d (operand 0 of L) to v.
template <typename T>
__global__ void fill(T* d, double v, Lay L) {
    T tv = (T)v;
    GRID_LOOP(i, L.n) {
        long long off[1];
        lay_offsets<1>(L, i, off);
        d[off[0]] = tv;
    }
}

// copy_k sets d = s elementwise (operands 0, 1 of L), converting S to D.
template <typename D, typename S>
__global__ void copy_k(D* d, const S* s, Lay L) {
    GRID_LOOP(i, L.n) {
        long long off[2];
        lay_offsets<2>(L, i, off);
        d[off[0]] = (D)s[off[1]];
    }
}

// unary sets d = op(a) (operands 0, 1 of L).
template <typename T>
__global__ void unary(int op, T* d, const T* a, double p0, double p1, Lay L) {
    T q0 = (T)p0, q1 = (T)p1;
    GRID_LOOP(i, L.n) {
        long long off[2];
        lay_offsets<2>(L, i, off);
        d[off[0]] = unary_op<T>(op, a[off[1]], q0, q1);
    }
}

// binary sets d = op(a, b) (operands 0, 1, 2 of L). d may alias a or b:
// every element is read before it is written, by the same thread.
template <typename T>
__global__ void binary(int op, T* d, const T* a, const T* b, double alpha, Lay L) {
    T al = (T)alpha;
    GRID_LOOP(i, L.n) {
        long long off[3];
        lay_offsets<3>(L, i, off);
        d[off[0]] = binary_op<T>(op, a[off[1]], b[off[2]], al);
    }
}

// where_k sets d = c != 0 ? a : b (operands 0..3 of L); with scalar set, a
// is the constant v (MaskedFill) and may be null.
template <typename T>
__global__ void where_k(T* d, const T* c, const T* a, const T* b, int scalar, double v, Lay L) {
    T tv = (T)v;
    GRID_LOOP(i, L.n) {
        long long off[4];
        lay_offsets<4>(L, i, off);
        T x;
        if (c[off[1]] != T(0)) {
            x = scalar ? tv : a[off[2]];
        } else {
            x = b[off[3]];
        }
        d[off[0]] = x;
    }
}

// adamw applies one AdamW step to p with gradient g and moments m, v
// (operands 0..3 of L), in double precision:
//   m = b1*m + (1-b1)*g,  v = b2*v + (1-b2)*g^2
//   p = p*(1 - lr*wd) - step * m / (sqrt(v)*ibc2 + eps)
// with step = lr/(1-b1^t) and ibc2 = 1/sqrt(1-b2^t) computed on the host.
template <typename T>
__global__ void adamw(T* p, const T* g, T* m, T* v, double lr, double b1, double b2,
                      double eps, double wd, double ibc2, double step, Lay L) {
    T decay = (T)(1.0 - lr * wd);
    GRID_LOOP(i, L.n) {
        long long off[4];
        lay_offsets<4>(L, i, off);
        double gi = (double)g[off[1]];
        double mi = b1 * (double)m[off[2]] + (1.0 - b1) * gi;
        double vi = b2 * (double)v[off[3]] + (1.0 - b2) * gi * gi;
        m[off[2]] = (T)mi;
        v[off[3]] = (T)vi;
        p[off[0]] = p[off[0]] * decay - (T)(step * mi / (sqrt(vi) * ibc2 + eps));
    }
}

// nonfinite sets *flag = 1 if any element of a (operand 0 of L) is NaN or
// infinite (x - x is 0 exactly for finite x). Threads that find one all
// store the same value, so no atomics are needed.
template <typename T>
__global__ void nonfinite(T* flag, const T* a, Lay L) {
    GRID_LOOP(i, L.n) {
        long long off[1];
        lay_offsets<1>(L, i, off);
        T x = a[off[0]];
        if (x - x != T(0)) *flag = T(1);
    }
}
