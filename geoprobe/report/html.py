"""The old home of the scan page's stylesheet, left only for the pages still importing ``_CSS``
(domains, compare, sula, intervene, windtunnel, denoise, positional): the stylesheet is
:data:`geoprobe.report.page.CSS`. Delete this module once none imports it."""
from geoprobe.report.page import CSS

_CSS = CSS
