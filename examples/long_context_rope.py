"""Long-context RoPE: Llama 3.1's `llama3` scaling against plain RoPE.

A model trained on 8,192 positions has seen each rotary pair turn through
angles up to `8192 * w_i`. Far past that, plain RoPE's slow pairs reach
angles never seen in training. Llama 3.1 rescales them: pairs whose
wavelength is longer than the trained context turn `factor` times slower,
fast pairs are kept, and those in between are blended. This script builds
both layers with `tf_input.RotaryEmbedding` (the `rope_scaling` dict of
Llama 3.1's config), and prints:

1. which pairs the scaling keeps, blends or slows down;
2. the slowest pair's angle at long distances, against the trained range;
3. the query-key score at long distances (RoFormer's all-ones q and k,
   see `tf_input.viz.rope_scores`), scaled vs unscaled;
4. a check that scores still depend only on the distance at 100k positions.

Run: python examples/long_context_rope.py [OUT.png | OUT_DIR]
With an argument, it also draws the score curves and, next to them, the
slow-down of each of the 64 pairs (point 1 as a picture; needs
matplotlib).
"""

import os
import pathlib
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

import tf_input  # noqa: E402
from tf_input import viz  # noqa: E402

HEAD_DIM = 128
ROPE_THETA = 500_000.0  # Llama 3.1's `rope_theta`
LLAMA3 = {  # Llama 3.1's `rope_scaling`
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
TRAINED = LLAMA3["original_max_position_embeddings"]
DISTANCES = [0, 1, 64, 1024, 8192, 16_384, 32_768, 65_536, 131_072]


def build(scaling):
    layer = tf_input.RotaryEmbedding(max_wavelength=ROPE_THETA, scaling=scaling)
    layer.build((None, None, HEAD_DIM))
    return layer


def score(layer, query, key, query_position, key_position):
    """<rope(q, m), rope(k, n)> / head_dim for one query and one key."""
    q = layer(query[None, None], positions=np.array([query_position]))
    k = layer(key[None, None], positions=np.array([key_position]))
    return float(np.sum(q.numpy() * k.numpy())) / HEAD_DIM


def main(argv):
    plain, scaled = build(None), build(LLAMA3)
    w_plain = plain.inverse_frequencies().numpy()
    w_scaled = scaled.inverse_frequencies().numpy()

    print("1. What llama3 scaling does to the 64 rotary pairs")
    ratio = w_plain / w_scaled
    kept = int(np.sum(np.isclose(ratio, 1.0)))
    slowed = int(np.sum(np.isclose(ratio, LLAMA3["factor"])))
    for label, count in (
        (f"kept (wavelength < {TRAINED // 4}):", kept),
        ("blended:", 64 - kept - slowed),
        (f"slowed down 8x (> {TRAINED}):", slowed),
    ):
        print(f"   {label:<28}{count:>3} pairs")

    trained_angle = TRAINED * w_plain[-1]
    print("\n2. Angle of the slowest pair (radians); training at")
    print(f"   {TRAINED:,} positions saw it up to {trained_angle:.4f}")
    print(f"   {'distance':>9}  {'plain':>8}  {'llama3':>8}")

    def angle(value):
        beyond = "*" if value > trained_angle * (1 + 1e-6) else " "
        return f"{value:>8.4f}{beyond}"

    for d in DISTANCES[4:]:
        print(f"   {d:>9,}  {angle(d * w_plain[-1])} {angle(d * w_scaled[-1])}")
    print("   * beyond the angles seen in training")

    print("\n3. Score <R(m) 1, R(0) 1> / head_dim vs distance m")
    plain_scores = viz.rope_scores(
        DISTANCES, HEAD_DIM, max_wavelength=ROPE_THETA
    )
    scaled_scores = viz.rope_scores(
        DISTANCES, HEAD_DIM, scaling=LLAMA3, max_wavelength=ROPE_THETA
    )
    print(f"   {'distance':>9}  {'plain':>8}  {'llama3':>8}")
    for d, a, b in zip(DISTANCES, plain_scores, scaled_scores):
        print(f"   {d:>9,}  {a:>8.4f}  {b:>8.4f}")
    print(
        "   llama3 decays more slowly: its slow pairs turn 8x slower, so at"
        "\n   65,536 they stand where plain RoPE's stand at 8,192."
    )

    print("\n4. Scores depend only on m - n, even 100k positions out")
    rng = np.random.default_rng(0)
    query, key = rng.normal(size=(2, HEAD_DIM)).astype("float32")
    near = score(scaled, query, key, 700, 0)
    far = score(scaled, query, key, 100_700, 100_000)
    print(f"   q at 700 / k at 0:           {near:+.6f}")
    print(f"   q at 100,700 / k at 100,000: {far:+.6f}")
    print(f"   difference: {abs(near - far):.1e} (float32 angles)")

    if len(argv) > 1:
        out = pathlib.Path(argv[1])
        if out.suffix.lower() != ".png":
            out = out / "long_context_rope.png"
        viz.plot_rope_scores(
            HEAD_DIM,
            32_768,
            scalings=["none", LLAMA3],
            original_max_position_embeddings=TRAINED,
            max_wavelength=ROPE_THETA,
            log_distance=True,
            path=out,
        )
        print(f"\nWrote {out}")


if __name__ == "__main__":
    main(sys.argv)
