"""Small model zoo in plain PyTorch (torchvision does not install here): ResNet-18/50,
MobileNetV2, VGG-11 and a BERT-like encoder, with random weights. The layer names follow
torchvision's (``layer1.0.conv1.weight``...), so parameter names can be compared with
what TVM's frontend gives for the torchvision models.

Used by tests/frontend/pytorch and benchmarks/pytorch.py (loaded by file path).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


# -- ResNet (torchvision.models.resnet, v1.5) ---------------------------------------------------
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes: int = 1000, width: int = 64) -> None:
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], 2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], 2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def resnet18(num_classes: int = 1000, width: int = 64) -> ResNet:
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes, width)


def resnet50(num_classes: int = 1000, width: int = 64) -> ResNet:
    return ResNet(Bottleneck, [3, 4, 6, 3], num_classes, width)


# -- MobileNetV2 (torchvision.models.mobilenetv2) ------------------------------------------------
def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class ConvBNReLU(nn.Sequential):
    def __init__(self, inp: int, out: int, kernel: int = 3, stride: int = 1, groups: int = 1):
        super().__init__(
            nn.Conv2d(inp, out, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(out),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        hidden = round(inp * expand_ratio)
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden, kernel=1))
        layers += [
            ConvBNReLU(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0) -> None:
        super().__init__()
        settings = [
            [1, 16, 1, 1],
            [6, 24, 2, 2],
            [6, 32, 3, 2],
            [6, 64, 4, 2],
            [6, 96, 3, 1],
            [6, 160, 3, 2],
            [6, 320, 1, 1],
        ]
        input_channel = _make_divisible(32 * width_mult)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult))
        features: list[nn.Module] = [ConvBNReLU(3, input_channel, stride=2)]
        for t, c, n, s in settings:
            output_channel = _make_divisible(c * width_mult)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(InvertedResidual(input_channel, output_channel, stride, t))
                input_channel = output_channel
        features.append(ConvBNReLU(input_channel, self.last_channel, kernel=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.classifier(x)


def mobilenet_v2(num_classes: int = 1000, width_mult: float = 1.0) -> MobileNetV2:
    return MobileNetV2(num_classes, width_mult)


# -- VGG-11 (torchvision.models.vgg, config "A") ----------------------------------------------
class VGG(nn.Module):
    def __init__(self, cfg, num_classes: int = 1000, hidden: int = 4096) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        in_channels = 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(in_channels, v, 3, padding=1), nn.ReLU(inplace=True)]
                in_channels = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(in_channels * 7 * 7, hidden),
            nn.ReLU(True),
            nn.Dropout(),
            nn.Linear(hidden, hidden),
            nn.ReLU(True),
            nn.Dropout(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def vgg11(num_classes: int = 1000, width: int = 64, hidden: int = 4096) -> VGG:
    w = width
    cfg = [w, "M", 2 * w, "M", 4 * w, 4 * w, "M", 8 * w, 8 * w, "M", 8 * w, 8 * w, "M"]
    return VGG(cfg, num_classes, hidden)


# -- a BERT-like encoder --------------------------------------------------------------------
class SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dense = nn.Linear(hidden, hidden)

    def _split(self, x):
        b, s, h = x.shape
        return x.view(b, s, self.heads, h // self.heads).transpose(1, 2)

    def forward(self, x, mask):
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        b, _, s, _ = ctx.shape
        return self.dense(ctx.transpose(1, 2).contiguous().view(b, s, -1))


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int) -> None:
        super().__init__()
        self.attention = SelfAttention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x, mask):
        x = self.ln1(x + self.dropout(self.attention(x, mask)))
        y = self.output(F.gelu(self.intermediate(x)))
        return self.ln2(x + self.dropout(y))


class BertEncoder(nn.Module):
    """Embeddings (word + position + token type, LayerNorm), ``layers`` encoder layers and a
    tanh pooler; ``forward(input_ids, attention_mask)`` with a 0/1 mask of shape (batch, seq)."""

    def __init__(
        self,
        vocab: int = 1000,
        hidden: int = 128,
        layers: int = 2,
        heads: int = 4,
        intermediate: int = 512,
        max_len: int = 128,
    ) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_len, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(
            EncoderLayer(hidden, heads, intermediate) for _ in range(layers)
        )
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        pos = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.position_embeddings(pos)
        x = self.ln(x + self.token_type_embeddings(torch.zeros_like(input_ids)))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


def bert_encoder(**kwargs) -> BertEncoder:
    return BertEncoder(**kwargs)


def randomize(model: nn.Module, seed: int = 0) -> nn.Module:
    """Random weights and batch-norm statistics (so batch norm is not the identity), eval mode."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.copy_(torch.rand(mod.num_features, generator=gen) * 0.2 - 0.1)
                mod.running_var.copy_(torch.rand(mod.num_features, generator=gen) * 0.5 + 0.75)
                mod.weight.copy_(torch.rand(mod.num_features, generator=gen) * 0.5 + 0.75)
                mod.bias.copy_(torch.rand(mod.num_features, generator=gen) * 0.2 - 0.1)
            elif isinstance(mod, nn.LayerNorm):
                mod.weight.copy_(torch.rand(mod.normalized_shape, generator=gen) * 0.5 + 0.75)
                mod.bias.copy_(torch.rand(mod.normalized_shape, generator=gen) * 0.2 - 0.1)
    return model.eval()


def cnn_input(size: int = 224, batch: int = 1, seed: int = 0) -> torch.Tensor:
    return torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(seed))


def bert_inputs(batch: int = 1, seq: int = 32, vocab: int = 1000, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (batch, seq), generator=gen)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[:, seq - seq // 4 :] = 0
    return ids, mask


def full_size(name: str):
    """``(model, example_args)`` of the full-size model ``name`` (batch 1, 224x224 images;
    a BERT-base-like encoder with 4 layers and 128 tokens)."""
    if name == "bert":
        bert = bert_encoder(
            vocab=30522, hidden=768, layers=4, heads=12, intermediate=3072, max_len=512
        )
        return randomize(bert), bert_inputs(seq=128, vocab=30522)
    ctors = {"resnet18": resnet18, "resnet50": resnet50, "mobilenet_v2": mobilenet_v2}
    return randomize({**ctors, "vgg11": vgg11}[name]()), (cnn_input(),)


def small(name: str):
    """``(model, example_args)`` of a small version of ``name``, for fast tests."""
    if name == "bert":
        bert = bert_encoder(vocab=100, hidden=32, layers=2, heads=4, intermediate=64, max_len=16)
        return randomize(bert), bert_inputs(seq=8, vocab=100)
    if name == "resnet18":
        return randomize(resnet18(num_classes=10, width=8)), (cnn_input(32),)
    if name == "resnet50":
        return randomize(resnet50(num_classes=10, width=4)), (cnn_input(32),)
    if name == "mobilenet_v2":
        return randomize(mobilenet_v2(num_classes=10, width_mult=0.25)), (cnn_input(32),)
    if name == "vgg11":
        return randomize(vgg11(num_classes=10, width=4, hidden=32)), (cnn_input(32),)
    raise KeyError(name)


MODELS = ("resnet18", "resnet50", "mobilenet_v2", "vgg11", "bert")
