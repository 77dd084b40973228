"""`source_op_names`: a header listing the ops the sources declare, for the op-case table's
completeness test (tests/op_cases_test.cc).

It reads the headers of `deps` (through CcInfo, since a genrule cannot glob another package),
keeps those under `basic_ops_dir` and the file `functional_header`, and writes with
tests/source_op_names.sh:
- every `class X : public Y` (or struct) of the basic-op headers, as {"X", "Y"};
- every function of the functional header that returns a Tensor.
A new header in ops/basic/ or a new declaration in autograd/functional.h shows up without any
edit here.
"""

def _source_op_names_impl(ctx):
    basic, functional = [], []
    for dep in ctx.attr.deps:
        for header in dep[CcInfo].compilation_context.headers.to_list():
            path = header.short_path
            if path.startswith(ctx.attr.basic_ops_dir) and path.endswith(".h"):
                basic.append(header)
            elif path == ctx.attr.functional_header:
                functional.append(header)
    if not basic or not functional:
        fail("source_op_names: no headers under %s or no %s in deps" % (ctx.attr.basic_ops_dir, ctx.attr.functional_header))
    ctx.actions.run(
        executable = ctx.executable._script,
        arguments = [ctx.outputs.out.path, functional[0].path] + [h.path for h in basic],
        inputs = basic + functional[:1],
        outputs = [ctx.outputs.out],
        progress_message = "Listing the ops of %s and %s" % (ctx.attr.basic_ops_dir, ctx.attr.functional_header),
    )

source_op_names = rule(
    implementation = _source_op_names_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "basic_ops_dir": attr.string(mandatory = True),
        "functional_header": attr.string(mandatory = True),
        "out": attr.output(mandatory = True),
        "_script": attr.label(
            default = "//tests:source_op_names.sh",
            executable = True,
            cfg = "exec",
            allow_single_file = True,
        ),
    },
)
