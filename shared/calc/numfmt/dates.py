"""Dates and times: `y yy yyyy`, `m mm mmm mmmm mmmmm` (minutes right after `h` or before `s`),
`d dd ddd dddd`, `h hh`, `s ss` with `.0`-`.000` fractions, `AM/PM` and `A/P` (12-hour clock),
elapsed `[h] [m] [s]`.

Serials follow Excel's 1900 date system (serial 60 is 1900-02-29, serial 0 is 1900-01-00) or the
1904 one. The time is rounded to the smallest unit shown (the second, or its shown fraction)
before it is split, so 23:59:59.6 shows as the next day's 0:00:00. In the 1900 system negative
serials and serials past 9999-12-31 are #VALUE!, except in an elapsed-time-only format (`[h]` of
-1 is -24); in the 1904 system a negative value shows its magnitude after a minus sign.
"""

from __future__ import annotations

import datetime

from shared.calc.numfmt.grammar import FormatError, Section, Unsupported
from shared.calc.numfmt.rounding import decimal, round_places

VALUE_ERROR = "#VALUE!"
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_MAX_SERIAL = 2958465  # 9999-12-31
_MAX_SERIAL_1904 = 2957003
_EPOCH_1904 = datetime.date(1904, 1, 1)


def _serial_date(days: int, date1904: bool = False) -> tuple[int, int, int]:
    """(year, month, day) of a whole serial in Excel's 1900 system (or the 1904 one)."""
    if date1904:
        d = _EPOCH_1904 + datetime.timedelta(days=days)
        return d.year, d.month, d.day
    if days == 0:
        return 1900, 1, 0
    if days == 60:
        return 1900, 2, 29
    base = datetime.date(1899, 12, 31) if days < 60 else datetime.date(1899, 12, 30)
    d = base + datetime.timedelta(days=days)
    return d.year, d.month, d.day


def format_date(value: float, section: Section, date1904: bool = False) -> str:
    """A serial under a date or time section (value signed: the section's own sign rule)."""
    tokens = section.tokens
    if value < 0 and date1904:
        return "-" + format_date(-value, section, date1904)
    max_serial = _MAX_SERIAL_1904 if date1904 else _MAX_SERIAL
    elapsed_only = all(t.kind in ("elapsed", "lit") for t in tokens) and sum(
        1 for t in tokens if t.kind == "elapsed") == 1
    if value < 0 and not elapsed_only:
        return VALUE_ERROR
    if value >= max_serial + 1 and not any(t.kind == "elapsed" for t in tokens):
        return VALUE_ERROR
    # Fractions of seconds shown: `.0`, `.00`, `.000` after a point in a time format.
    frac_places = 0
    for i, t in enumerate(tokens):
        if t.kind == "point":
            n = 0
            while i + 1 + n < len(tokens) and tokens[i + 1 + n].kind == "digit":
                n += 1
            frac_places = max(frac_places, n)
    if frac_places > 3:
        raise FormatError("more than three decimals of a second")
    negative = value < 0
    magnitude = abs(value)
    units = 10 ** frac_places
    total = int(round_places(decimal(magnitude * 86400 * units), 0))  # in 1/units seconds
    days, part = divmod(total, 86400 * units)
    seconds_total, fraction = divmod(part, units)
    hour, minute, second = seconds_total // 3600, seconds_total // 60 % 60, seconds_total % 60
    year, month, day = _serial_date(days, date1904) if days <= max_serial else (0, 0, 0)
    if days > max_serial and any(t.kind == "date" and t.text[0] in "ymd" for t in tokens):
        return VALUE_ERROR
    twelve = any(t.kind == "ampm" for t in tokens)
    # Which m's are minutes: right after an h (or [h]) or right before an s, literals between.
    kinds = []
    for i, t in enumerate(tokens):
        if t.kind == "date" and t.text in ("m", "mm"):
            prev = next((x for x in reversed(tokens[:i]) if x.kind in ("date", "elapsed")), None)
            nxt = next((x for x in tokens[i + 1 :] if x.kind in ("date", "elapsed")), None)
            is_minute = (prev is not None and prev.text[0] == "h") or (
                nxt is not None and nxt.text[0] == "s")
            kinds.append("minute" if is_minute else "month")
        else:
            kinds.append(None)
    out = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.kind == "lit":
            out.append(t.text)
        elif t.kind == "elapsed":
            seconds_all = total // units
            unit = t.text[0]
            amount = {"h": seconds_all // 3600, "m": seconds_all // 60, "s": seconds_all}[unit]
            text = str(amount).rjust(len(t.text), "0")
            out.append(("-" if negative else "") + text)
        elif t.kind == "ampm":
            pm = hour >= 12
            word = t.text
            if word.lower() == "am/pm":
                out.append("PM" if pm else "AM")
            else:
                letter = "P" if pm else "A"
                out.append(letter if word[0].isupper() else letter.lower())
        elif t.kind == "point":
            n = 0
            while i + 1 + n < len(tokens) and tokens[i + 1 + n].kind == "digit":
                n += 1
            if n:
                out.append("." + str(fraction).rjust(frac_places, "0")[:n])
                i += n
            else:
                out.append(".")
        elif t.kind == "comma":
            out.append(",")
        elif t.kind == "date":
            code = t.text
            c = code[0]
            if c == "y":  # y and yy: two digits; three or more: four
                out.append(f"{year % 100:02d}" if len(code) <= 2 else f"{year:04d}")
            elif c == "d":  # d, dd, ddd (Mon), dddd and more (Monday)
                if len(code) == 1:
                    out.append(str(day))
                elif len(code) == 2:
                    out.append(f"{day:02d}")
                else:
                    # 1900: serial 1 is a Sunday (Excel's, across its phantom 29 February);
                    # 1904: serial 0 is Friday 1 January 1904.
                    name = _DAYS[(days + 5) % 7 if date1904 else (days + 6) % 7]
                    out.append(name[:3] if len(code) == 3 else name)
            elif c == "m" and kinds[i] == "minute":
                out.append(str(minute) if len(code) == 1 else f"{minute:02d}")
            elif c == "m":
                if len(code) == 1:
                    out.append(str(month))
                elif len(code) == 2:
                    out.append(f"{month:02d}")
                elif len(code) == 3:
                    out.append(_MONTHS[month - 1][:3])
                elif len(code) == 5:  # mmmmm: the first letter
                    out.append(_MONTHS[month - 1][0])
                else:  # mmmm, and six or more: the whole name
                    out.append(_MONTHS[month - 1])
            elif c == "h":
                h = hour
                if twelve:
                    h = hour % 12 or 12
                out.append(str(h) if len(code) == 1 else f"{h:02d}")
            elif c == "s":
                out.append(str(second) if len(code) == 1 else f"{second:02d}")
        elif t.kind == "percent":
            out.append("%")
        elif t.kind == "slash":
            out.append("/")
        else:
            raise Unsupported(f"{t.kind} in a date format")
        i += 1
    return "".join(out)


# --- text that reads as a number -----------------------------------------------------------
