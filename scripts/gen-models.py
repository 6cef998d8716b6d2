#!/usr/bin/env python3
"""Generate the reference model files in scenarios/models/ from the architectures.

Writes four libconfig model files (format: core/model.h), one layer entry per
module that owns parameters, named as that module and in the order PyTorch
registers the parameters (model.named_parameters(), so `ddpsim model` names
every tensor as PyTorch does), with that module's tensors in registration
order (weight before bias), plus parameter-less layers for the work between
them, named after the module that does it: attention scores and context,
BERT's MLM decoder and GPT-2's LM head (weights tied to the word
embeddings), activations, dropout, residual adds, pooling and the losses.
Every layer has a kind (conv, batch_norm, layer_norm, linear, embedding,
attention, activation, pooling, loss, other) and says which layers it reads
(`inputs`, where that is not the layer before; the first convolution the
image, `in_bytes`), so that the simulator's per-operation compute model
(sim/compute.h) counts the bytes each moves and, under autocast, which
inputs are cast. Attention layers give their heads and the probability
of their dropout of attention weights (the configurations' 0.1), so that
the memory estimate (sim/memfit.h) knows the score matrices an unfused
attention keeps.

Gradient-ready order: ddpsim's rule for a model without ready_order (layers
last to first, conv and norm layers weight before bias, others reversed) is
what PyTorch's autograd does when the layers run in the order listed. Where
they do not, the model is given the order in which its layers run and the
file gets an explicit ready_order from the same rule over that order:
BERT's embeddings add token types before positions, and its MLM bias is
registered on cls.predictions ahead of the head's transform but applied by
the decoder after it (transformers 5.25.0, models/bert/modeling_bert.py:
BertEmbeddings.forward, BertLMPredictionHead). Checked against real PyTorch
by bench/pytorch-buckets.sh.

  resnet50.cfg    torchvision.models.resnet50 (ResNet v1.5: stride on the 3x3
                  conv). K. He, X. Zhang, S. Ren, J. Sun, "Deep Residual
                  Learning for Image Recognition", CVPR 2016, arXiv:1512.03385.
                  224x224 input, 1000 classes; 25,557,032 parameters.
  vgg16.cfg       torchvision.models.vgg16 (configuration "D", no batch norm).
                  K. Simonyan, A. Zisserman, "Very Deep Convolutional Networks
                  for Large-Scale Image Recognition", ICLR 2015,
                  arXiv:1409.1556. 224x224 input, 1000 classes; 138,357,544
                  parameters.
  bert-large.cfg  HuggingFace transformers BertForPreTraining with the
                  "bert-large-uncased" config (24 layers, hidden 1024, 16
                  heads, intermediate 4096, vocab 30522, 512 positions, 2 token
                  types). J. Devlin, M.-W. Chang, K. Lee, K. Toutanova, "BERT:
                  Pre-training of Deep Bidirectional Transformers for Language
                  Understanding", NAACL 2019, arXiv:1810.04805. Encoder +
                  pooler + pretraining heads (MLM transform, LayerNorm and
                  decoder bias; the decoder weight is tied to the word
                  embeddings) + NSP head; 336,226,108 parameters. Sample = one
                  512-token sequence.
  gpt2-xl.cfg     HuggingFace transformers GPT2LMHeadModel with the "gpt2-xl"
                  config (n_layer 48, n_embd 1600, n_head 25, vocab 50257,
                  n_positions 1024). A. Radford, J. Wu, R. Child, D. Luan,
                  D. Amodei, I. Sutskever, "Language Models are Unsupervised
                  Multitask Learners", OpenAI 2019. LM head tied to wte;
                  1,557,611,200 parameters. Sample = one 1024-token sequence.

FLOP counting (forward, per sample): 2 FLOPs per multiply-add of every
convolution and matmul. Batch/layer norm, activations, softmax, pooling,
residual additions, dropout and embedding lookups are not counted (they are
memory-bound and well under 1% of the FLOPs here), so those layers carry
fwd_flops = 0.0 and their bytes through act_bytes and inputs. Transformers count per token the weight matmuls (QKV, attention
output, FFN, pooler/heads where applied) and the attention score and context
matmuls, 2 * 2 * seq * d_model per token per layer (full, unmasked matrix, as
the HuggingFace code computes it), on a parameter-less "<layer>.attn.scores"
entry; the sample is one sequence, so per-token FLOPs are multiplied by its
length. BERT's MLM decoder is applied to every position (as HuggingFace's
BertForPreTraining does); its pooler and NSP head run on the [CLS] token only.
act_bytes is the module's output size per sample in fp32 (4 bytes per element).

Usage: scripts/gen-models.py [--out DIR] [--check]
  --out DIR   write into DIR instead of scenarios/models/ next to this script
  --check     write nothing; exit 1 if any file differs from what would be written

The output is deterministic: rerunning produces the same bytes.
Standard library only.
"""

import argparse
import os
import sys

INT32_MAX = 2**31 - 1
SOURCE_MAX = 511          # core_model.source is char[512]
NAME_MAX = 63             # core_layer.name is char[64]


KINDS = ("conv", "batch_norm", "layer_norm", "group_norm", "linear", "embedding", "attention",
         "activation", "pooling", "loss", "other")
WEIGHT_FIRST = ("conv", "batch_norm", "layer_norm", "group_norm")


class Model:
    def __init__(self, name):
        self.name = name
        # (name, [tensor elems], fwd_flops, act_bytes, [rows], kind, [param names] or None)
        self.layers = []
        self.moves = []  # (layer, the layer it runs after), where not in listed order

    def add(self, name, params, fwd_flops, act_elems, kind, rows=None, pnames=None, inputs=None,
            in_elems=0, inplace=False, heads=0, dropout=0.0):
        """rows: each tensor's first dimension, shape[0] (PowerSGD views a
        gradient as shape[0] x the rest); default: 1-D tensors. pnames: the
        tensors' names where they are not weight (and bias). inputs: the
        layers whose outputs it reads, by name (default: the layer before;
        [] reads the batch's data, in_elems elements a sample). inplace: the
        op writes its output over its input (no memory of its own). heads,
        dropout: an attention's heads and the probability it drops a weight
        with (the shape of its score matrices over the model's seq_len, and
        whether PyTorch's CPU kernel can fuse it). Returns the name."""
        assert len(name) <= NAME_MAX, name
        assert kind in KINDS, (name, kind)
        assert all(isinstance(p, int) and p >= 1 for p in params), (name, params)
        rows = list(params) if rows is None else list(rows)
        assert len(rows) == len(params) and all(p % r == 0 for p, r in zip(params, rows)), (name, rows)
        assert pnames is None or len(pnames) == len(params), (name, pnames)
        known = [l[0] for l in self.layers]
        if inputs is not None:
            assert all(i in known for i in inputs), (name, inputs)
            if known and list(inputs) == [known[-1]]:
                inputs = None  # the default
        assert kind == "attention" or (heads == 0 and dropout == 0), name
        self.layers.append((name, list(params), float(fwd_flops), 4.0 * act_elems, rows, kind,
                            pnames, inputs, 4.0 * in_elems, inplace, heads, float(dropout)))
        return name

    def run_after(self, name, other):
        """Layer name runs right after layer other, not where it is listed."""
        self.moves.append((name, other))

    def runs(self):
        """Layer names in the order the layers run."""
        order = [l[0] for l in self.layers]
        for name, other in self.moves:
            order.remove(name)
            order.insert(order.index(other) + 1, name)
        return order

    def ready_order(self, layer_order=None):
        """Tensor indices in gradient-ready order: ddpsim's rule (core/model.h)
        over the layers in the order they run."""
        first, pos = {}, 0
        for l in self.layers:
            first[l[0]] = pos
            pos += len(l[1])
        by_name = {l[0]: l for l in self.layers}
        out = []
        for name in reversed(layer_order or [l[0] for l in self.layers]):
            n = len(by_name[name][1])
            idx = range(n) if by_name[name][5] in WEIGHT_FIRST else reversed(range(n))
            out += [first[name] + i for i in idx]
        return out

    @property
    def n_params(self):
        return sum(sum(l[1]) for l in self.layers)

    @property
    def n_tensors(self):
        return sum(len(l[1]) for l in self.layers)

    @property
    def fwd_flops(self):
        return sum(l[2] for l in self.layers)


# ---------------------------------------------------------------- CNNs

def conv(m, name, cin, cout, k, stride, pad, h, w, bias, inputs=None, in_elems=0):
    """Add a k x k convolution on an h x w input; return the output size."""
    ho = (h + 2 * pad - k) // stride + 1
    wo = (w + 2 * pad - k) // stride + 1
    weight = cout * cin * k * k
    macs = weight * ho * wo
    # weight [cout, cin, k, k], bias [cout]
    m.add(name, [weight, cout] if bias else [weight], 2 * macs, cout * ho * wo, "conv",
          rows=[cout, cout] if bias else [cout], inputs=inputs, in_elems=in_elems)
    return ho, wo


def bn(m, name, c, h, w):
    return m.add(name, [c, c], 0, c * h * w, "batch_norm")


def act(m, name, elems, inputs=None, inplace=False):
    """A parameter-less elementwise op (ReLU, GELU, tanh, dropout; a
    residual add with two inputs); inplace when it overwrites its input."""
    return m.add(name, [], 0, elems, "activation", inputs=inputs, inplace=inplace)


def linear(m, name, fin, fout, tokens=1, bias=True, conv1d=False, inputs=None):
    """nn.Linear (weight [out, in]) or HF Conv1D (weight [in, out]) applied to
    `tokens` positions per sample."""
    r = fin if conv1d else fout
    return m.add(name, [fin * fout, fout] if bias else [fin * fout],
                 2 * fin * fout * tokens, fout * tokens, "linear", rows=[r, fout] if bias else [r],
                 inputs=inputs)


def resnet(name, blocks, num_classes=1000, size=224):
    """torchvision Bottleneck ResNet (v1.5) with the given blocks per stage;
    a block's one ReLU module, applied three times, is three layers here
    (relu1, relu2, relu3), and its residual add one (add). The ReLUs are
    nn.ReLU(inplace=True) and the add `out += identity` (torchvision's
    models/resnet.py): in place."""
    m = Model(name)
    h, w = conv(m, "conv1", 3, 64, 7, 2, 3, size, size, bias=False, inputs=[],
                in_elems=3 * size * size)
    bn(m, "bn1", 64, h, w)
    act(m, "relu", 64 * h * w, inplace=True)
    h, w = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1  # maxpool 3x3 s2 p1
    x = m.add("maxpool", [], 0, 64 * h * w, "pooling")
    inplanes = 64
    for stage, (n, planes) in enumerate(zip(blocks, (64, 128, 256, 512)), 1):
        for b in range(n):
            stride = 2 if (b == 0 and stage > 1) else 1
            p = "layer%d.%d." % (stage, b)
            h1, w1 = conv(m, p + "conv1", inplanes, planes, 1, 1, 0, h, w, bias=False, inputs=[x])
            bn(m, p + "bn1", planes, h1, w1)
            act(m, p + "relu1", planes * h1 * w1, inplace=True)
            h2, w2 = conv(m, p + "conv2", planes, planes, 3, stride, 1, h1, w1, bias=False)
            bn(m, p + "bn2", planes, h2, w2)
            act(m, p + "relu2", planes * h2 * w2, inplace=True)
            h3, w3 = conv(m, p + "conv3", planes, planes * 4, 1, 1, 0, h2, w2, bias=False)
            main = bn(m, p + "bn3", planes * 4, h3, w3)
            short = x
            if stride != 1 or inplanes != planes * 4:
                conv(m, p + "downsample.0", inplanes, planes * 4, 1, stride, 0, h, w, bias=False,
                     inputs=[x])
                short = bn(m, p + "downsample.1", planes * 4, h3, w3)
            act(m, p + "add", planes * 4 * h3 * w3, inputs=[main, short], inplace=True)
            x = act(m, p + "relu3", planes * 4 * h3 * w3, inplace=True)
            inplanes, h, w = planes * 4, h3, w3
    m.add("avgpool", [], 0, 512 * 4, "pooling")
    linear(m, "fc", 512 * 4, num_classes)  # after global average pooling
    m.add("loss", [], 0, 0, "loss")  # CrossEntropyLoss on the logits
    return m


def vgg(name, cfg, num_classes=1000, size=224):
    """torchvision VGG without batch norm; layer names are the Sequential
    indices (features.1 is the ReLU after conv features.0). Its ReLUs are
    nn.ReLU(inplace=True), its dropouts not (torchvision's models/vgg.py)."""
    m = Model(name)
    idx, c, h, w = 0, 3, size, size
    for v in cfg:
        if v == "M":
            h, w = h // 2, w // 2
            m.add("features.%d" % idx, [], 0, c * h * w, "pooling")
            idx += 1
        else:
            first = idx == 0
            h, w = conv(m, "features.%d" % idx, c, v, 3, 1, 1, h, w, bias=True,
                        inputs=[] if first else None, in_elems=3 * size * size if first else 0)
            c = v
            act(m, "features.%d" % (idx + 1), c * h * w, inplace=True)
            idx += 2  # conv, ReLU
    # AdaptiveAvgPool2d((7, 7)) then Linear, ReLU, Dropout, Linear, ReLU, Dropout, Linear
    m.add("avgpool", [], 0, c * 7 * 7, "pooling")
    linear(m, "classifier.0", c * 7 * 7, 4096)
    act(m, "classifier.1", 4096, inplace=True)
    act(m, "classifier.2", 4096)
    linear(m, "classifier.3", 4096, 4096)
    act(m, "classifier.4", 4096, inplace=True)
    act(m, "classifier.5", 4096)
    linear(m, "classifier.6", 4096, num_classes)
    m.add("loss", [], 0, 0, "loss")
    return m


VGG16_CFG = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
             512, 512, 512, "M"]

# ---------------------------------------------------------------- transformers


def attn_scores(m, name, seq, d, heads, inputs, dropout):
    """Q K^T and softmax(.) V: 2 matmuls of seq x seq x d MACs per sample,
    in one call of scaled_dot_product_attention, its dropout of the
    attention weights inside."""
    return m.add(name, [], 2 * 2 * seq * seq * d, seq * d, "attention", inputs=inputs,
                 heads=heads, dropout=dropout)


def layer_norm(m, name, d, tokens, inputs=None):
    return m.add(name, [d, d], 0, tokens * d, "layer_norm", inputs=inputs)


def bert(name, layers, d, heads, ffn, vocab=30522, positions=512, types=2, seq=512,
         heads_on=True, attn_dropout=0.1):
    """HF BertForPreTraining (or BertModel when heads_on is False), with its
    module names (transformers 5.25.0, models/bert/modeling_bert.py); the
    parameter-less ops (adds, dropout, activations, losses) as layers named
    after the module that applies them. attn_dropout: BertConfig's
    attention_probs_dropout_prob (0.1 in bert-large-uncased's config)."""
    m = Model(name)
    e = ("bert." if heads_on else "") + "embeddings."
    E = seq * d
    m.add(e + "word_embeddings", [vocab * d], 0, E, "embedding", rows=[vocab], inputs=[])
    m.add(e + "position_embeddings", [positions * d], 0, E, "embedding", rows=[positions], inputs=[])
    m.add(e + "token_type_embeddings", [types * d], 0, E, "embedding", rows=[types], inputs=[])
    act(m, e + "add", E, inputs=[e + "word_embeddings", e + "token_type_embeddings"])
    act(m, e + "add_position", E, inputs=[e + "add", e + "position_embeddings"])
    layer_norm(m, e + "LayerNorm", d, seq)
    x = act(m, e + "dropout", E)
    # BertEmbeddings.forward adds the token type embeddings, then the positions.
    m.run_after(e + "position_embeddings", e + "token_type_embeddings")
    for i in range(layers):
        p = ("bert." if heads_on else "") + "encoder.layer.%d." % i
        for y in ("query", "key", "value"):
            linear(m, p + "attention.self." + y, d, d, seq, inputs=[x])
        attn_scores(m, p + "attention.self", seq, d, heads,
                    [p + "attention.self." + y for y in ("query", "key", "value")], attn_dropout)
        linear(m, p + "attention.output.dense", d, d, seq)
        act(m, p + "attention.output.dropout", E)
        act(m, p + "attention.output.add", E, inputs=[p + "attention.output.dropout", x])
        a = layer_norm(m, p + "attention.output.LayerNorm", d, seq)
        linear(m, p + "intermediate.dense", d, ffn, seq)
        act(m, p + "intermediate.intermediate_act_fn", seq * ffn)  # GELU
        linear(m, p + "output.dense", ffn, d, seq)
        act(m, p + "output.dropout", E)
        act(m, p + "output.add", E, inputs=[p + "output.dropout", a])
        x = layer_norm(m, p + "output.LayerNorm", d, seq)
    pre = "bert." if heads_on else ""
    linear(m, pre + "pooler.dense", d, d, 1, inputs=[x])  # [CLS] token only
    pooled = act(m, pre + "pooler.activation", d)  # tanh
    if heads_on:
        # The MLM bias is cls.predictions' own parameter, so named_parameters()
        # lists it before the transform; the decoder adds it last. The
        # decoder's weight is word_embeddings.weight (tied): no tensor of its own.
        m.add("cls.predictions", [vocab], 0, 0, "other", pnames=["bias"])
        linear(m, "cls.predictions.transform.dense", d, d, seq, inputs=[x])
        act(m, "cls.predictions.transform.transform_act_fn", E)  # GELU
        layer_norm(m, "cls.predictions.transform.LayerNorm", d, seq)
        m.add("cls.predictions.decoder", [], 2 * d * vocab * seq, vocab * seq, "linear")
        m.add("mlm_loss", [], 0, 0, "loss")  # CrossEntropyLoss over every position
        m.run_after("cls.predictions", "cls.predictions.decoder")
        linear(m, "cls.seq_relationship", d, 2, 1, inputs=[pooled])  # on the pooled output
        m.add("nsp_loss", [], 0, 0, "loss")
    return m


def gpt2(name, n_layer, d, heads, vocab=50257, positions=1024, seq=1024, attn_pdrop=0.1):
    """HF GPT2LMHeadModel; lm_head.weight is tied to wte, so it adds no tensor.
    Parameter-less ops as layers named after the module that applies them.
    attn_pdrop: GPT2Config's attention dropout (0.1 in gpt2-xl's config)."""
    m = Model(name)
    E = seq * d
    m.add("transformer.wte", [vocab * d], 0, E, "embedding", rows=[vocab], inputs=[])
    m.add("transformer.wpe", [positions * d], 0, E, "embedding", rows=[positions], inputs=[])
    act(m, "transformer.add", E, inputs=["transformer.wte", "transformer.wpe"])
    x = act(m, "transformer.drop", E)
    for i in range(n_layer):
        p = "transformer.h.%d." % i
        layer_norm(m, p + "ln_1", d, seq, inputs=[x])
        linear(m, p + "attn.c_attn", d, 3 * d, seq, conv1d=True)
        attn_scores(m, p + "attn", seq, d, heads, [p + "attn.c_attn"], attn_pdrop)
        linear(m, p + "attn.c_proj", d, d, seq, conv1d=True)
        act(m, p + "attn.resid_dropout", E)
        a = act(m, p + "attn.add", E, inputs=[p + "attn.resid_dropout", x])
        layer_norm(m, p + "ln_2", d, seq)
        linear(m, p + "mlp.c_fc", d, 4 * d, seq, conv1d=True)
        act(m, p + "mlp.act", 4 * E)  # GELU
        linear(m, p + "mlp.c_proj", 4 * d, d, seq, conv1d=True)
        act(m, p + "mlp.dropout", E)
        x = act(m, p + "mlp.add", E, inputs=[p + "mlp.dropout", a])
    layer_norm(m, "transformer.ln_f", d, seq, inputs=[x])
    m.add("lm_head", [], 2 * d * vocab * seq, vocab * seq, "linear")
    m.add("loss", [], 0, 0, "loss")
    return m


# ---------------------------------------------------------------- output


def fmt_float(v):
    """A libconfig float: always with a decimal point or an exponent."""
    assert v == v and v not in (float("inf"), float("-inf")) and v >= 0, v
    if v == int(v) and v < 1e15:
        return "%d.0" % int(v)
    r = repr(float(v))
    assert "." in r or "e" in r, r
    return r


def fmt_params(params):
    # libconfig arrays hold one scalar type: if any element needs int64, all get L.
    suffix = "L" if any(p > INT32_MAX for p in params) else ""
    return "[" + ", ".join("%d%s" % (p, suffix) for p in params) + "]"


def render(m, description, source, sample, seq_len=None):
    assert len(source) <= SOURCE_MAX, (m.name, len(source))
    assert '"' not in source + sample + description and "\\" not in source + sample
    names = [l[0] for l in m.layers]
    assert len(set(names)) == len(names), "duplicate layer names in " + m.name
    out = ["# %s \u2014 generated by scripts/gen-models.py; do not edit by hand." % description,
           "model = {",
           '  name = "%s";' % m.name,
           '  source = "%s";' % source,
           '  sample = "%s";' % sample]
    if seq_len is not None:
        out.append("  seq_len = %d;" % seq_len)
    out.append("  layers = (")
    for i, (name, params, flops, act, rows, kind, pnames, inputs, in_bytes, inplace, heads,
            dropout) in enumerate(m.layers):
        fields = ['name = "%s";' % name, 'kind = "%s";' % kind]
        if params:
            fields.append("params = %s;" % fmt_params(params))
            if pnames:
                fields.append("param_names = [%s];" % ", ".join('"%s"' % n for n in pnames))
            if rows != params:
                fields.append("rows = %s;" % fmt_params(rows))
        fields.append("fwd_flops = %s;" % fmt_float(flops))
        fields.append("act_bytes = %s;" % fmt_float(act))
        if inputs is not None:
            fields.append("inputs = [%s];" % ", ".join('"%s"' % n for n in inputs))
        if in_bytes:
            fields.append("in_bytes = %s;" % fmt_float(in_bytes))
        if inplace:
            fields.append("inplace = true;")
        if heads:
            fields.append("heads = %d;" % heads)
        if dropout:
            fields.append("dropout = %r;" % dropout)
        sep = "," if i + 1 < len(m.layers) else ""
        out.append("    { %s }%s" % (" ".join(fields), sep))
    out.append("  );")
    if m.moves:
        ready = m.ready_order(m.runs())
        assert sorted(ready) == list(range(m.n_tensors)) and ready != m.ready_order()
        out.append("  # Gradient-ready order: the layers do not run in the order listed.")
        out += wrap("  ready_order = [", [str(t) for t in ready], "];")
    out.append("};")
    return "\n".join(out) + "\n"


def wrap(head, items, tail, width=100):
    """head + items joined by ", " + tail, in lines of at most width."""
    lines, cur = [], head
    for k, it in enumerate(items):
        piece = it + (", " if k + 1 < len(items) else tail)
        if len(cur) + len(piece.rstrip()) > width:
            lines.append(cur.rstrip())
            cur = "    "
        cur += piece
    lines.append(cur)
    return lines


def expect(what, got, want):
    if got != want:
        sys.exit("gen-models.py: %s has %d parameters, expected %d" % (what, got, want))


def expect_range(what, got, lo, hi):
    if not lo <= got <= hi:
        sys.exit("gen-models.py: %s is %.4g, expected within [%.4g, %.4g]" % (what, got, lo, hi))


def self_test():
    """Cross-check the builders against other published parameter counts."""
    expect("resnet101", resnet("resnet101", [3, 4, 23, 3]).n_params, 44549160)
    expect("resnet152", resnet("resnet152", [3, 8, 36, 3]).n_params, 60192808)
    expect("vgg19", vgg("vgg19", [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M",
                                  512, 512, 512, 512, "M", 512, 512, 512, 512, "M"]).n_params,
           143667240)
    expect("bert-base BertModel", bert("b", 12, 768, 12, 3072, heads_on=False).n_params, 109482240)
    expect("bert-base BertForPreTraining", bert("b", 12, 768, 12, 3072).n_params, 110106428)
    expect("gpt2 (small)", gpt2("g", 12, 768, 12).n_params, 124439808)


def build():
    models = []

    m = resnet("resnet50", [3, 4, 6, 3])
    expect("resnet50", m.n_params, 25557032)
    expect_range("resnet50 forward GMAC", m.fwd_flops / 2e9, 4.05, 4.15)
    models.append((m, render(
        m, "ResNet-50 (torchvision), 224x224, 1000 classes",
        "torchvision.models.resnet50 (ResNet v1.5; He et al. 2016, arXiv:1512.03385); params "
        "counted from the architecture: %d; forward %.2f GMAC per 224x224 image, 2 FLOPs per MAC, "
        "convs and fc only (BN, ReLU, pooling and residual adds not counted)"
        % (m.n_params, m.fwd_flops / 2e9),
        "one 3x224x224 image")))

    m = vgg("vgg16", VGG16_CFG)
    expect("vgg16", m.n_params, 138357544)
    expect_range("vgg16 forward GMAC", m.fwd_flops / 2e9, 15.4, 15.6)
    models.append((m, render(
        m, "VGG-16 (torchvision, no batch norm), 224x224, 1000 classes",
        "torchvision.models.vgg16 (configuration D without BN; Simonyan & Zisserman 2015, "
        "arXiv:1409.1556); params counted from the architecture: %d; forward %.2f GMAC per "
        "224x224 image, 2 FLOPs per MAC, convs and linears only (ReLU, pooling, dropout not counted)"
        % (m.n_params, m.fwd_flops / 2e9),
        "one 3x224x224 image")))

    m = bert("bert-large", 24, 1024, 16, 4096)
    expect("bert-large", m.n_params, 336226108)
    expect_range("bert-large forward GFLOP", m.fwd_flops / 1e9, 300, 400)
    models.append((m, render(
        m, "BERT-large uncased for pretraining (MLM + NSP heads), 512-token sequences",
        "HuggingFace BertForPreTraining, bert-large-uncased config (Devlin et al. 2019, "
        "arXiv:1810.04805): 24 layers, hidden 1024, 16 heads, FFN 4096, vocab 30522; params "
        "counted from the architecture: %d (encoder+embeddings+pooler 335141888, pretraining "
        "heads 1084220; MLM decoder weight tied to word embeddings); forward %.1f GFLOPs per "
        "512-token sequence: 2 FLOPs per MAC of all matmuls incl. attention scores and the MLM "
        "decoder on every position; LayerNorm, GELU, softmax not counted"
        % (m.n_params, m.fwd_flops / 1e9),
        "one 512-token sequence", seq_len=512)))

    m = gpt2("gpt2-xl", 48, 1600, 25)
    expect("gpt2-xl", m.n_params, 1557611200)
    expect_range("gpt2-xl forward GFLOP", m.fwd_flops / 1e9, 3000, 4000)
    models.append((m, render(
        m, "GPT-2 XL (1.5B) language model, 1024-token sequences",
        "HuggingFace GPT2LMHeadModel, gpt2-xl config (Radford et al. 2019, 'Language Models "
        "are Unsupervised Multitask Learners'): 48 layers, n_embd 1600, 25 heads, vocab 50257, 1024 positions; params counted "
        "from the architecture: %d (lm_head tied to wte); forward %.1f GFLOPs per 1024-token "
        "sequence: 2 FLOPs per MAC of all matmuls incl. full attention scores and the tied "
        "lm_head; LayerNorm, GELU, softmax not counted" % (m.n_params, m.fwd_flops / 1e9),
        "one 1024-token sequence", seq_len=1024)))
    return models


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, os.pardir, "scenarios", "models"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    self_test()
    stale = []
    for m, text in build():
        path = os.path.normpath(os.path.join(args.out, m.name + ".cfg"))
        data = text.encode("utf-8")
        print("%-11s %14s params  %9.2f GFLOPs fwd/sample  %4d layers  %4d tensors  -> %s"
              % (m.name, "{:,}".format(m.n_params), m.fwd_flops / 1e9, len(m.layers),
                 m.n_tensors, path))
        old = None
        if os.path.exists(path):
            with open(path, "rb") as f:
                old = f.read()
        if old == data:
            continue
        if args.check:
            stale.append(path)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    if stale:
        sys.exit("gen-models.py: out of date (rerun scripts/gen-models.py): " + ", ".join(stale))


if __name__ == "__main__":
    main()
