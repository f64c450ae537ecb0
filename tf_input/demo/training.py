"""How the demo trains: when a scheme stops, and what the results say."""

from __future__ import annotations

import numpy as np

from tf_input.demo.task import answers_from

STOP_AT = 0.99  # validation exact match that ends a scheme's training
# ... or, from epoch STALL_FROM on, a validation accuracy that rose less
# than STALL_DELTA over the last STALL_EPOCHS epochs (Keras's patience
# rule). Every plateau measured rose by 1 to 9 points in 3 epochs before
# its transition, and all transitions came by epoch 5; 'none' rises ~0.5.
STALL_FROM = 6
STALL_EPOCHS = 3
STALL_DELTA = 0.005
TARGET = 0.95  # every scheme with position information should reach it


class EpochReport:
    """A Keras callback: after each epoch, validation and test accuracy,
    printed; test accuracy kept in `history`; training stopped once the
    validation accuracy reaches `STOP_AT`, or has stalled (`stalled`)."""

    def __new__(cls, scheme, validation, test, history, print_fn):
        import keras

        held_out_history = []

        class Report(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                held_out = _accuracy(self.model, *validation)
                accuracy = _accuracy(self.model, *test)
                held_out_history.append(held_out)
                history.append(accuracy)
                loss = (logs or {}).get("loss", float("nan"))
                print_fn(
                    f"   {scheme:<12}epoch {epoch + 1}: loss {loss:.3f}, "
                    f"validation {held_out:.1%}, test {accuracy:.1%}"
                )
                if held_out >= STOP_AT:
                    self.model.stop_training = True
                elif stalled(held_out_history):
                    print_fn(
                        f"   {scheme:<12}stopped: validation accuracy rose "
                        f"less than {STALL_DELTA * 100:.1f} points in "
                        f"{STALL_EPOCHS} epochs"
                    )
                    self.model.stop_training = True

        return Report()


def stalled(accuracies):
    """Whether training has stalled: from epoch `STALL_FROM` on, the best
    accuracy so far beats the best of `STALL_EPOCHS` epochs before by less
    than `STALL_DELTA`.

    Example:

    >>> from tf_input import demo
    >>> demo.stalled([0.02, 0.03, 0.049, 0.05, 0.051, 0.053])
    True
    >>> demo.stalled([0.06, 0.09, 0.10, 0.14, 0.80, 0.93])
    False
    """
    if len(accuracies) < max(STALL_FROM, STALL_EPOCHS + 1):
        return False
    before = max(accuracies[:-STALL_EPOCHS])
    return max(accuracies) - before < STALL_DELTA


def verdict(accuracies, history, *, quick=False, target=TARGET):
    """What the table shows, in a few sentences (a list of str).

    'none' is clearly worst when it is 10 points below every other scheme.
    A scheme with position information below `target` is reported with its
    measured reason: still rising at the end (it needed more steps), or
    not.
    """
    if quick:
        return ["--quick trains on a few batches: these accuracies are noise."]
    lines = []
    others = [s for s in accuracies if s != "none"]
    if accuracies["none"] < min(accuracies[s] for s in others) - 0.1:
        lines.append(
            "'none' is clearly worst: without position information, "
            "attention sees a bag of tokens. `3 0` and `0 3` are the same "
            "bag, so it cannot tell 30 from 03."
        )
    low = [s for s in others if accuracies[s] < target]
    if not low:
        spread = max(accuracies[s] for s in others) - min(
            accuracies[s] for s in others
        )
        lines.append(
            f"Every scheme with position information reaches {target:.0%} "
            f"(within {spread * 100:.1f} points of each other): here they "
            "all do the job."
        )
    for scheme in low:
        curve = history[scheme]
        rise = curve[-1] - curve[-2] if len(curve) > 1 else 0.0
        if rise > 0.02:
            lines.append(
                f"{scheme!r} reached {accuracies[scheme]:.1%}, below "
                f"{target:.0%}, and was still rising ({rise * 100:+.1f} "
                "points in the last epoch): it needed more steps than the "
                "budget, not another scheme."
            )
        else:
            lines.append(
                f"{scheme!r} reached {accuracies[scheme]:.1%}, below "
                f"{target:.0%}, and had stopped improving "
                f"({rise * 100:+.1f} points in the last epoch)."
            )
    return lines


def _accuracy(model, features, results):
    """Exact match: sign and every digit right, over one batch.

    A plain call: `model.predict` would compile another XLA program, which
    takes longer than the whole test set.
    """
    predicted = answers_from(model(features, training=False))
    return float(np.mean(predicted == results))
