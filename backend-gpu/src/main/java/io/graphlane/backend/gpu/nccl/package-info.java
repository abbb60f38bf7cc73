/**
 * Collectives on NCCL through JavaCPP's {@code org.bytedeco.cuda.global.nccl}: communicators from
 * the {@code ncclUniqueId} bytes rank 0 shares, all-reduce, all-gather and all-to-all (grouped
 * send/recv) enqueued on the caller's lane, each after a {@link io.graphlane.backend.gpu.nccl.DescriptorConsensus}
 * round; NCCL failures carry {@code ncclGetErrorString}. JCuda's streams and device pointers are
 * handed to NCCL by raw address ({@code jcuda.GraphlaneNativeAccess}).
 *
 * <p>A GPU host needs {@code libnccl.so.2} and {@code libcudart.so.N} (the build's CUDA major) on the
 * loader path or in the nvidia wheels of the {@code python3} on {@code PATH}. Sharing
 * the id between processes, and consensus across them, is the actors' job: this package takes the
 * bytes and a {@link io.graphlane.backend.gpu.nccl.DescriptorConsensus}; cluster-config's
 * {@code io.graphlane.cluster.collective.NcclControlPlane} provides both over the cluster.
 */
package io.graphlane.backend.gpu.nccl;
