"""``ortnb edge export`` and ``ortnb edge train``: the two halves of on-device training from a shell."""

from __future__ import annotations

import argparse
import sys


def cmd_export(options: argparse.Namespace) -> int:
    """Turn a fine-tuned sequence classifier into ONNX Runtime training artifacts."""
    from ..errors import ConfigError
    from .artifacts import export_artifacts

    trainable = options.trainable.split(",") if "," in options.trainable or "." in options.trainable \
        else options.trainable
    try:
        result = export_artifacts(options.model, options.out, trainable=trainable, loss=options.loss,
                                  optimizer=options.optimizer, seq_len=options.seq_len, opset=options.opset)
    except (ConfigError, FileNotFoundError) as error:
        print(f"ortnb edge export: {error}", file=sys.stderr)
        return 2
    print(f"ortnb edge export: {result}")
    for name, size in result.files.items():
        print(f"  {name:<22} {size / 1e6:9.2f} MB")
    return 0


def cmd_train(options: argparse.Namespace) -> int:
    """Train artifacts on a .jsonl/.json/.csv file with ONNX Runtime's training API, without PyTorch."""
    from .. import metrics
    from ..errors import ConfigError
    from ..terminal import follow
    from .run import train

    try:
        run = train(options.artifacts, options.data, steps=options.steps, batch_size=options.batch_size,
                    learning_rate=options.lr, eval_dataset=options.eval, eval_every=options.eval_every,
                    save_every=options.save_every, resume_from=options.resume, seed=options.seed,
                    output_dir=options.runs, wait=False)
    except (ConfigError, FileNotFoundError) as error:
        print(f"ortnb edge train: {error}", file=sys.stderr)
        return 2
    print(f"ortnb edge train: {run.run_dir}")
    signalled = follow(run, "edge train", interval=0.2)
    run.wait()
    for evaluation in metrics.evaluations(run.records()):
        print(f"eval at step {evaluation['step']}: loss {evaluation['eval_loss']:.4f}, "
              f"accuracy {evaluation['accuracy']:.3f} on {evaluation['samples']} rows")
    print(f"ortnb edge train: {run.status}; engine {run.summary()['engine']}; checkpoint {run.checkpoint}; "
          f"inference model {run.inference_model}")
    if run.status == "failed":
        print(run.error, file=sys.stderr)
    if signalled is not None:
        return signalled  # as a shell reports a command a signal ended: 128 + its number
    from ..runs.records import COMPLETED, STOPPED

    return 0 if run.status in (COMPLETED, STOPPED) else 1  # a stopped run ended as asked


def cmd_web(options: argparse.Namespace) -> int:
    """Write a static folder in which the artifacts train in a browser tab (ONNX Runtime Web), and serve it."""
    from ..errors import ConfigError
    from .web_build import web_bundle
    from .web_runtime import WebRuntimeChanged
    from .web_server import PortUnavailable

    try:
        bundle = web_bundle(options.artifacts, options.out, data=options.data, eval_data=options.eval,
                            steps=options.steps, batch_size=options.batch_size, learning_rate=options.lr,
                            seed=options.seed, threads=options.threads)
    except (ConfigError, FileNotFoundError, WebRuntimeChanged) as error:
        print(f"ortnb edge web: {error}", file=sys.stderr)
        return 2
    print(f"ortnb edge web: {bundle.summary()}")
    if not options.serve:
        print(bundle.how_to_serve(options.port))
        return 0
    try:
        server = bundle.serve(port=options.port, isolated=options.isolated)
    except PortUnavailable as error:
        print(f"ortnb edge web: {error}; the bundle is written, in {bundle.folder}", file=sys.stderr)
        return 2
    print(f"ortnb edge web: serving it at {server.url}"
          + (" (cross-origin isolated: threads allowed)" if options.isolated else " (one thread; --isolated for more)")
          + "; open that address in a browser. Ctrl-C stops the server", flush=True)
    try:
        import threading

        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def add_commands(commands) -> None:
    edge = commands.add_parser("edge", help="on-device training: export artifacts, train them without PyTorch")
    sub = edge.add_subparsers(dest="edge_command", required=True)
    export = sub.add_parser("export", help=cmd_export.__doc__, description=cmd_export.__doc__)
    export.add_argument("model", help="a save_pretrained folder, a Trainer output_dir or an ortnb run folder")
    export.add_argument("out", help="the artifacts folder to write")
    export.add_argument("--trainable", default="head",
                        help="head, last_layers:N, all, or comma-separated PyTorch parameter names (default head)")
    export.add_argument("--loss", default="cross_entropy", help="cross_entropy, mse, bce_with_logits or l1")
    export.add_argument("--optimizer", default="adamw", help="adamw or sgd")
    export.add_argument("--seq-len", type=int, default=128)
    export.add_argument("--opset", type=int, default=None, help="14 to 20 (default 15)")
    export.set_defaults(run=cmd_export)
    train = sub.add_parser("train", help=cmd_train.__doc__, description=cmd_train.__doc__ + " Ctrl-C, SIGTERM "
                           "and SIGHUP stop it after the step in progress, with a checkpoint.")
    train.add_argument("artifacts", help="the folder `ortnb edge export` wrote")
    train.add_argument("data", help="rows with a text (or input_ids) column and a label column")
    train.add_argument("--steps", type=int, required=True)
    train.add_argument("--batch-size", type=int, default=16)
    train.add_argument("--lr", type=float, default=1e-4, help="peak learning rate, decayed linearly to 0")
    train.add_argument("--eval", default=None, help="held-out rows, evaluated before and after")
    train.add_argument("--eval-every", type=int, default=0)
    train.add_argument("--save-every", type=int, default=0)
    train.add_argument("--resume", default=None, help="an earlier edge run folder or checkpoint file")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--runs", default="runs", help="where run folders go")
    train.set_defaults(run=cmd_train)
    web = sub.add_parser("web", help=cmd_web.__doc__, description=cmd_web.__doc__ + " Any static server serves the "
                         "folder (python -m http.server too); --serve starts one on 127.0.0.1.")
    web.add_argument("artifacts", help="the folder `ortnb edge export` wrote")
    web.add_argument("out", help="the bundle folder to write: new, empty, or an earlier bundle (its files are "
                     "replaced; files you added stay)")
    web.add_argument("--data", default=None, help="rows to bundle: a .jsonl/.json/.csv file with text and label columns")
    web.add_argument("--eval", default=None, help="held-out rows the page evaluates on")
    web.add_argument("--steps", type=int, default=20,
                     help="optimizer steps each press of the page's Train button takes (default 20)")
    web.add_argument("--batch-size", type=int, default=16)
    web.add_argument("--lr", type=float, default=1e-3, help="peak learning rate, decayed linearly to 0 (default 1e-3)")
    web.add_argument("--seed", type=int, default=0)
    web.add_argument("--threads", type=int, default=None,
                     help="WebAssembly threads (default: 1, or up to 4 when served cross-origin isolated)")
    web.add_argument("--serve", action="store_true", help="serve the bundle on 127.0.0.1 until Ctrl-C")
    web.add_argument("--port", type=int, default=8000)
    web.add_argument("--isolated", action="store_true",
                     help="send the cross-origin isolation headers (COOP/COEP), so the page can use threads")
    web.set_defaults(run=cmd_web)
