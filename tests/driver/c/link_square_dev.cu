// The device function link_square.cu calls, linked in as PTX.
__device__ unsigned square(unsigned x) { return x * x; }
