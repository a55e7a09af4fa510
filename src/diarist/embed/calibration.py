"""What was fitted on one embedding model's scores, in one record per model (an embedder class
declares its own, ``Embedder.calibration``): its relevance floors, and whether the block's cut
(``settings.CUT_*``, with the pointers trim fitted together with it) was chosen on its cosines.
Another model's cosines are on another scale: a model with no record gets no floor and no cut
(``Memory(floor="auto", cut="auto")`` apply none) until it is calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..read.floor import Floor


@dataclass(frozen=True)
class Calibration:
    #: Best cosine under which search answers "nothing relevant" (``Memory(floor="cosine")``);
    #: None: no calibrated floor.
    relevance_floor: float | None = None
    #: The floor that also reads the question and the lexical index (``Memory(floor="auto")``,
    #: diarist.read.floor); None: "auto" takes ``relevance_floor``.
    evidence_floor: Floor | None = None
    #: The block's cut (``Memory(cut="auto")``, diarist.read.cut) and the pointers trim were
    #: fitted on this model's cosines.
    block_cut: bool = False


UNCALIBRATED = Calibration()
