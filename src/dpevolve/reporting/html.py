"""HTML building blocks of the report: escaping, tables, numbers, embedded figures.

Every function returns escaped HTML (or text ready to escape); the page embeds its CSS
and its figures as base64 PNGs so that it loads nothing.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


_DPI = 100


_PNG_PREFIX = "data:image/png;base64,"


CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       max-width: 62rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f;
       line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid #ccc; padding-bottom: 0.2rem;
     margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
.meta { color: #555; font-size: 0.9rem; }
.verdict { font-size: 1.05rem; background: #f4f4f8; border-left: 5px solid #444;
           padding: 0.2rem 1rem; margin: 1rem 0; }
details { margin: 0.6rem 0; }
summary { cursor: pointer; color: #1a56db; }
.guarantee { font-size: 1.1rem; background: #eef6ee; border-left: 5px solid #2e7d32;
             padding: 0.8rem 1rem; margin: 1rem 0; }
.warning { background: #fff4e5; border-left: 5px solid #e65100; padding: 0.6rem 1rem;
           margin: 1rem 0; }
.public { background: #e8f0fe; border-left: 5px solid #1a56db; padding: 0.6rem 1rem;
          margin: 1rem 0; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #d0d0d0; padding: 0.25rem 0.55rem; text-align: left;
         vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { width: 14rem; }
code { font-size: 0.85rem; word-break: break-word; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e0e0e0; }
figcaption { color: #555; font-size: 0.85rem; }
ul.notes li { margin: 0.3rem 0; }
@media print { body { max-width: none; } h2 { page-break-after: avoid; } }
"""


def figure_html(fig: Figure, alt: str, caption_html: str) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI)
    return img_html(buffer.getvalue(), alt, caption_html, caption_is_html=True)


def img_html(data: bytes, alt: str, caption: str, caption_is_html: bool = False) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    text = caption if caption_is_html else escape(caption)
    return (
        f'<figure><img alt="{escape(alt)}" src="{_PNG_PREFIX}{encoded}">'
        f"<figcaption>{text}</figcaption></figure>"
    )


# ------------------------------------------------------------------------ HTML bits
def escape(value: Any) -> str:
    return html.escape(str(value), quote=True)


def html_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], table_id: str | None = None
) -> str:
    """A table; ``rows`` hold already-escaped cells (``<td>`` or ``<td class=num>``)."""
    ident = f' id="{escape(table_id)}"' if table_id else ""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def kv_table(rows: Sequence[tuple[str, str]], table_id: str) -> str:
    """Label/value rows; values are already-escaped HTML."""
    body = "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv" id="{escape(table_id)}"><tbody>{body}</tbody></table>'


def num_cell(value: Any, digits: int = 4) -> str:
    return f'<td class="num">{escape(fmt_num(value, digits))}</td>'


def fmt_num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        return f"{value:.{digits}g}"
    return str(value)


def fmt_upper(value: Any, digits: int = 4, sci: bool = False) -> str:
    """``value`` to ``digits`` significant digits, rounded *up*: a stated guarantee must
    never be smaller than the computed one. Excess below 1e-9 (relative) is float noise
    from calibration, which lands a few ulps above the target, and is dropped. ``sci``
    writes values below 0.01 in e-notation (``4.18e-04``, ``1e-05``)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "∞" if value is None else str(value)
    x = float(value)
    if x <= 0 or not math.isfinite(x):
        return fmt_num(x, digits)
    exponent = math.floor(math.log10(x))
    scale = 10.0 ** (digits - 1 - exponent)
    rounded = math.ceil(x * scale * (1 - 1e-9)) / scale
    if sci and rounded < 0.01:
        mantissa, power = f"{rounded:.{digits - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{power}"
    return f"{rounded:.{digits}g}"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def pretty_sci(text: str) -> str:
    """``'1e-05'`` -> ``'1×10⁻⁵'``: a data steward reads powers of ten, not e-notation."""
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return power if mantissa == "1" else f"{mantissa}×{power}"


def compact(value: Any) -> str:
    if isinstance(value, float):
        return fmt_num(value, 6)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
