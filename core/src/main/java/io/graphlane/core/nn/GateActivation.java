package io.graphlane.core.nn;

/**
 * The activation on the gate of a gated MLP ({@code act(gate) · up}), as Hugging Face's {@code hidden_act} names it.
 */
public enum GateActivation {
    /** {@code x · sigmoid(x)} ({@code silu}, SwiGLU). */
    SILU("silu"),
    /** The exact GELU {@code x · Φ(x) = 0.5 x (1 + erf(x / √2))} ({@code gelu}). */
    GELU("gelu"),
    /** The tanh approximation {@code 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))} ({@code gelu_new}, {@code gelu_pytorch_tanh}). */
    GELU_TANH("gelu_pytorch_tanh");

    private final String hfName;

    GateActivation(String hfName) {
        this.hfName = hfName;
    }

    /** A name config.json uses for it. */
    public String hfName() {
        return hfName;
    }

    /** The activation of {@code x}, in double precision (the reference the backends' F32 kernels follow). */
    public double apply(double x) {
        return switch (this) {
            case SILU -> x / (1.0 + Math.exp(-x));
            case GELU -> 0.5 * x * (1.0 + erf(x / Math.sqrt(2.0)));
            case GELU_TANH -> 0.5 * x * (1.0 + Math.tanh(Math.sqrt(2.0 / Math.PI) * (x + 0.044715 * x * x * x)));
        };
    }

    /**
     * The error function, to about 1.2e-7 absolute (Numerical Recipes' {@code erfc} Chebyshev fit), enough for F32 activations:
     * the JDK has none.
     */
    public static double erf(double x) {
        double z = Math.abs(x);
        double t = 1.0 / (1.0 + 0.5 * z);
        double erfc = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
                + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
                + t * (-0.82215223 + t * 0.17087277)))))))));
        return x >= 0 ? 1.0 - erfc : erfc - 1.0;
    }
}
