// Kernels for tests/vulkan/test_recursion.py (nvcc -ptx at test time): recursive device
// functions on the Vulkan backend's call stack (passes/call_stack.py). Each kernel's
// answers are compared with a host reference and with the CPU backend's.
struct Stats { long long sum; int count; int depth; };

// mutual recursion: one component of two functions
__device__ __noinline__ bool is_odd(unsigned n);
__device__ __noinline__ bool is_even(unsigned n) { return n == 0 ? true : is_odd(n - 1); }
__device__ __noinline__ bool is_odd(unsigned n) { return n == 0 ? false : is_even(n - 1); }

extern "C" __global__ void parity(const unsigned* in, int* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) out[t] = is_even(in[t]) ? 1 : 0;
}

// a non-recursive helper with a local array of its own, called from inside the recursion
__device__ __noinline__ unsigned long long hash_of(const int* a, int n) {
  int copy[8];
  for (int i = 0; i < n; ++i) copy[n - 1 - i] = a[i];
  unsigned long long h = 1469598103934665603ull;
  for (int i = 0; i < n; ++i) h = (h ^ (unsigned)copy[i]) * 1099511628211ull;
  return h;
}

// Heap's algorithm over a local array that each frame copies: every permutation, in order;
// the recursive calls sit inside a loop
__device__ __noinline__ unsigned long long permute(const int* a, int k, int n) {
  int local[8];
  for (int i = 0; i < n; ++i) local[i] = a[i];
  if (k == 1) return hash_of(local, n);
  unsigned long long acc = 0;
  for (int i = 0; i < k; ++i) {
    acc = acc * 3 + permute(local, k - 1, n);
    int j = (k % 2 == 0) ? i : 0;
    int t = local[j]; local[j] = local[k - 1]; local[k - 1] = t;
  }
  return acc;
}

extern "C" __global__ void permutations(const int* in, unsigned long long* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int a[8];
  int len = 1 + t % 6;
  for (int i = 0; i < 8; ++i) a[i] = in[t * 8 + i];
  out[t] = permute(a, len, len);
}

// return sites in a loop and in a loop inside it: returns reach them through both headers
__device__ __noinline__ int nest(int n, int k) {
  if (n <= 0) return k & 7;
  int s = 1;
  for (int i = 0; i < n % 3 + 1; ++i) {
    s += nest(n - 1 - i, k + i);
    for (int j = 0; j < (i ^ k) % 3; ++j) s ^= nest(n - 2 - j, k * 3 + j) << 1;
  }
  return s;
}

extern "C" __global__ void nested_loops(int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = nest(t % 9, t);
}

// a struct returned by value through the recursion
__device__ __noinline__ Stats split(int lo, int hi, int depth) {
  if (hi - lo <= 2) {
    Stats s{0, 0, depth};
    for (int i = lo; i < hi; ++i) { s.sum += (long long)i * i; s.count++; }
    return s;
  }
  int mid = lo + (hi - lo) / 3;
  Stats a = split(lo, mid, depth + 1), b = split(mid, hi, depth + 1);
  return Stats{a.sum + b.sum, a.count + b.count, a.depth > b.depth ? a.depth : b.depth};
}

extern "C" __global__ void structs(Stats* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) out[t] = split(t, 3 * t + 5, 0);
}

// each lane of a warp recurses to its own depth, and takes the second call or not
__device__ __noinline__ unsigned walk(unsigned x, int depth) {
  if (depth == 0) return x;
  unsigned r = walk(x * 3 + 1, depth - 1);
  if (x & 1) r += walk(r ^ x, depth / 2);
  return r ^ (x >> 1);
}

extern "C" __global__ void divergent(unsigned* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = walk(t, t % 13);
}

// two call sites of one recursive function, the second in a loop; and a recursive
// function that calls another recursive one (a nested component)
__device__ __noinline__ int digit_sum(int x) { return x < 10 ? x : x % 10 + digit_sum(x / 10); }

__device__ __noinline__ int digital_root_steps(int x) {  // (not a loop in disguise)
  if (x < 10) return 0;
  int r = digital_root_steps(digit_sum(x));
  return r * r + 1;
}

extern "C" __global__ void two_sites(const int* in, int* out, int* steps, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int v = digit_sum(in[t]);
  for (int i = 0; i < t % 5; ++i) v += digit_sum(in[t] + i * 1000003);
  out[t] = v;
  steps[t] = digital_root_steps(in[t]);
}

// as deep as each thread asks, with a local array in each frame: deep enough overflows
__device__ __noinline__ int deep(int n, volatile int* sink) {
  int pad[4];
  for (int i = 0; i < 4; ++i) pad[i] = n + i;
  if (n == 0) return 0;
  int r = deep(n - 1, sink) + 1;
  *sink = pad[n & 3];
  return r;
}

extern "C" __global__ void depth(const int* in, int* out, int* sink) {
  int t = threadIdx.x;
  out[t] = deep(in[t], sink);
}

// a barrier inside recursion: refused by name (by the CPU backend too)
__device__ __noinline__ int synced(int n) {
  if (n <= 1) return n;
  int a = synced(n - 1);
  __syncthreads();
  return a + synced(n - 2);
}

extern "C" __global__ void barrier_in_recursion(int* out) {
  out[threadIdx.x] = synced(5);
}
