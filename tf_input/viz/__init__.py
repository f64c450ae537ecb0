"""Pictures of position information and of padding, drawn with matplotlib.

Every `plot_*` function returns a `matplotlib.figure.Figure` and, given
`path`, also saves it there, in the format its suffix names (`.png`,
`.jpg`, `.svg`, `.pdf`, ...; PNG when it has none). Figures are built
directly (no `pyplot`, no global state, no display needed): show one in a
notebook by leaving it as the cell's value, or save it.

One module per picture family:

* `sinusoidal`: `plot_sinusoidal_encoding`, the sine/cosine encoding as a
  heatmap, its sin and cos columns marked, next to a few of its columns
  against position.
* `similarity`: `plot_position_similarity`, cosine similarity between the
  rows of a learned position table, optionally labelled with what each
  position holds.
* `rope`: `plot_rope_scores`, RoPE's query-key score against relative
  distance, one curve per scaling type (numbers from `rope_scores`), and
  how much each scaling slows each rotary pair.
* `lengths`: `plot_lengths`, a length histogram and the padding efficiency
  of each batching mode, measured by `make_dataset` and
  `tf_input.data.stats` on the same examples (numbers from `report`'s
  `length_report`).
* `packed`: `plot_packed_batch`, a packed batch coloured by segment, next
  to one row's block-diagonal attention mask.
* `accuracy`: `plot_accuracy`, accuracy per epoch, one curve per run.

matplotlib is an optional dependency: `pip install "tf_input[viz]"`. Only
the `plot_*` functions need it; `rope_scores`, `local_mean`,
`length_report` and the other helpers are plain NumPy/TensorFlow.
"""

from tf_input.data.efficiency import BATCHINGS
from tf_input.data.efficiency import padding_efficiencies
from tf_input.data.efficiency import quantile_boundaries
from tf_input.viz._figure import image_format
from tf_input.viz.accuracy import plot_accuracy
from tf_input.viz.lengths import integer_bins
from tf_input.viz.lengths import plot_length_report
from tf_input.viz.lengths import plot_lengths
from tf_input.viz.packed import plot_packed_batch
from tf_input.viz.report import LengthReport
from tf_input.viz.report import length_report
from tf_input.viz.rope import ROPE_SCALINGS
from tf_input.viz.rope import local_mean
from tf_input.viz.rope import plot_rope_scores
from tf_input.viz.rope import rope_scaling_preset
from tf_input.viz.rope import rope_scores
from tf_input.viz.rope import slowdown_factors
from tf_input.viz.similarity import cosine_similarity
from tf_input.viz.similarity import plot_position_similarity
from tf_input.viz.sinusoidal import plot_sinusoidal_encoding
from tf_input.viz.sinusoidal import sinusoid_columns

__all__ = [
    "BATCHINGS",
    "LengthReport",
    "ROPE_SCALINGS",
    "cosine_similarity",
    "image_format",
    "integer_bins",
    "length_report",
    "local_mean",
    "padding_efficiencies",
    "plot_accuracy",
    "plot_length_report",
    "plot_lengths",
    "plot_packed_batch",
    "plot_position_similarity",
    "plot_rope_scores",
    "plot_sinusoidal_encoding",
    "quantile_boundaries",
    "rope_scaling_preset",
    "rope_scores",
    "sinusoid_columns",
    "slowdown_factors",
]
