// A __managed__ array the host writes and reads at its own address (the runtime registers it
// at start-up), kernels read and update: on a discrete GPU it must be managed memory (one
// address for host and device), not device memory the host can reach only through copies.
__managed__ unsigned MG[64];

extern "C" __global__ void scale(unsigned* out, unsigned k) {
    unsigned i = threadIdx.x;
    out[i] = MG[i] * k;
    MG[i] += 1;
}
