package io.graphlane.backend.gpu;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.JCudaDriver;

/**
 * Discovers CUDA devices and selects one by ordinal ({@code --device N}). The driver applies
 * {@code CUDA_VISIBLE_DEVICES} itself: ordinals count only the devices it lists, in its order,
 * so {@code CUDA_VISIBLE_DEVICES=3 ... --device 0} drives physical GPU 3.
 */
public final class GpuDevices {
    private GpuDevices() {
    }

    /**
     * Every visible device.
     *
     * @throws GpuUnavailableException if the driver is missing or shows no device
     */
    public static List<GpuDeviceInfo> list() {
        CudaLibraries.require(CudaLibrary.DRIVER);
        int[] count = new int[1];
        CudaErrors.check(JCudaDriver.cuDeviceGetCount(count), "cuDeviceGetCount", "the driver");
        List<GpuDeviceInfo> devices = new ArrayList<>(count[0]);
        for (int i = 0; i < count[0]; i++) {
            devices.add(describe(i));
        }
        return devices;
    }

    /**
     * The device with ordinal {@code ordinal}.
     *
     * @throws GpuUnavailableException if the driver is missing, or naming the visible count if {@code ordinal} is out of range
     */
    public static GpuDeviceInfo select(int ordinal) {
        CudaLibraries.require(CudaLibrary.DRIVER);
        int[] count = new int[1];
        CudaErrors.check(JCudaDriver.cuDeviceGetCount(count), "cuDeviceGetCount", "the driver");
        checkOrdinal(ordinal, count[0]);
        return describe(ordinal);
    }

    /** Refuses an ordinal outside {@code [0, visible)}, naming the option, the expected range and the found value. */
    static void checkOrdinal(int ordinal, int visible) {
        if (ordinal < 0 || ordinal >= visible) {
            throw new GpuUnavailableException("--device " + ordinal + " does not exist: expected 0.."
                    + (visible - 1) + " (" + visible + " visible CUDA device" + (visible == 1 ? "" : "s")
                    + CudaLibraries.visibleDevicesNote() + "); choose another --device or " + GpuUnavailableException.HINT);
        }
    }

    private static GpuDeviceInfo describe(int ordinal) {
        String where = "cuda" + ordinal;
        CUdevice device = new CUdevice();
        CudaErrors.check(JCudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet", where);
        byte[] name = new byte[256];
        CudaErrors.check(JCudaDriver.cuDeviceGetName(name, name.length, device), "cuDeviceGetName", where);
        int length = 0;
        while (length < name.length && name[length] != 0) {
            length++;
        }
        long[] memory = new long[1];
        CudaErrors.check(JCudaDriver.cuDeviceTotalMem(memory, device), "cuDeviceTotalMem", where);
        int[] major = new int[1];
        int[] minor = new int[1];
        CudaErrors.check(JCudaDriver.cuDeviceGetAttribute(major, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                "cuDeviceGetAttribute", where);
        CudaErrors.check(JCudaDriver.cuDeviceGetAttribute(minor, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                "cuDeviceGetAttribute", where);
        return new GpuDeviceInfo(ordinal, new String(name, 0, length, StandardCharsets.US_ASCII), memory[0], major[0], minor[0]);
    }
}
