"""Arguments IronCalc 0.9.1 reads differently from Excel, rewritten at model load.

Excel's rules (Microsoft support, each function's page):

- Statistical functions given values directly: "Logical values and text representations of
  numbers that you type directly into the list of arguments are counted"; "arguments that are
  error values or text that cannot be translated into numbers cause errors"; in a reference or
  an array they are ignored (STDEV.S, STDEV.P, VAR.S, VAR.P, STDEVA, VARA, DEVSQ, AVEDEV,
  SUMSQ, MODE.SNGL, KURT, STDEVPA, VARPA and their compatibility names). IronCalc 0.9.1 drops
  a literal TRUE or "3" from these (STDEV(1,TRUE,"3") is #DIV/0!, Excel 1.1547...;
  SUMSQ(1,TRUE,"3") 1,
  Excel 11), while AVERAGE, COUNT, MAX, MIN, SUM, MEDIAN, PRODUCT, GEOMEAN, HARMEAN and SKEW
  are already right (measured). The rewrite writes such a literal as the number Excel reads:
  TRUE 1, FALSE 0, "3" 3. Typed text with no digit in it ("x", "") cannot be a number, a date
  or a time, so it is the #VALUE! Excel answers (IronCalc 0.9.1 drops it: STDEV(1,2,3,"x") is 1,
  SUMSQ(1,"") 1; Excel saved #VALUE! for STDEV(...,"") and eleven more in formulas' test.xlsx);
  other text that is not a plain number ("50%", "$5", "12:00", "1/2/2020") is left to IronCalc,
  which drops it too (STDEV("50%",1.5) #DIV/0!, Excel 0.707...): Excel reads it by the user's
  locale, so the cell is flagged at upload (`typed_text_reason`, unfixable.py), not guessed. Not MODE and
  MODE.SNGL: there Excel ignores such text, against its page (test.xlsx STATISTICAL!S71
  `MODE.SNGL(D71:E71,E71:F71,F71:G71,"")` saved 0.2), as IronCalc does.
- The same holds for a value an expression gives (Excel distinguishes values from references,
  not typed from calculated: the pages' "typed directly" are the arguments that are not
  references): STDEV(1=1,3) is STDEV(1,3), SUMSQ(A1>0,2) 5, VAR("3"&"",1) VAR(3,1), where
  IronCalc 0.9.1 drops the TRUE or the text (#DIV/0!, 4, #DIV/0!; AVERAGE, SUM, MAX, MIN and
  COUNT read them right, measured). An argument made only of literals, single cells and
  operators whose last operator is a comparison (TRUE/FALSE) or `&` (text) is written
  `--(...)`, the number Excel reads (text that is not a number: #VALUE!, as typed). Not in
  MODE, whose page does not say typed logical values count and whose typed text Excel ignores
  (above): there such an argument is flagged (functions/unfixable.py). Left alone: arguments with a
  function call, a range, a name or an array, whose result may be a reference or an array.
- COUNT and AVERAGE given an array constant: "If an argument is an array or reference, only
  numbers in that array or reference are counted" (COUNT and AVERAGE pages). IronCalc 0.9.1
  miscounts arrays (COUNT(A1:A3,{1,2}) is COUNT(A1:A3) alone, AVERAGE({1,2,TRUE}) 1.333,
  Excel 1.5). An array constant of literals is known at load: COUNT(a,{1,2,"x"},b) becomes
  `(COUNT(a,b)+2)` (COUNT adds up over its arguments) and AVERAGE(a,{1,2,TRUE},b)
  `((SUM(a,b)+3)/(COUNT(a,b)+2))` (SUM and COUNT read the other arguments by AVERAGE's own
  rules: typed TRUE and "3" count, typed text and errors are errors for SUM, references
  give their numbers); an array holding an error is left alone (flagged, unfixable.py). Only
  in formulas whose sheet XML has a `{` after the call (one scan), and, where workbook.xml
  defines a name to an array constant (names.py inlines it), in every COUNT/AVERAGE formula.
- LEFT, RIGHT and MID (and LEFTB, RIGHTB, MIDB) given their character counts or start as text
  or a logical value: Excel converts a text that reads as a number where a number is expected
  ("Converting values in formulas", Microsoft's "Calculation operators and precedence" page:
  ="1"+"2" is 3), a logical value as 1 or 0 and a blank cell as 0, from a typed literal, a
  cell or an expression alike (Excel-saved: formulas' test.xlsx TEXT!Y20 LEFT("ciao",TRUE cell)
  "c", Y37 RIGHT "o", Y25 MID("ciao",TRUE cell,blank cell) "", and the same for LEFTB, RIGHTB,
  MIDB in rows 21, 38, 26). IronCalc 0.9.1 answers #VALUE! for LEFT("abc","2"), for TRUE, and
  for a cell holding either (measured; REPT, FIXED, ROUND, CHAR, FIND, SUBSTITUTE, REPLACE
  convert them). The rewrite writes a typed literal as the number (`"2"` 2, TRUE 1), and wraps
  an argument that is one cell (`B1`, `+B1`, `(B1)`) or a comparison or concatenation
  (expression_kind) as `--(...)`, which IronCalc reads as Excel does (measured: TRUE 1, FALSE
  0, "2" and " 2 " 2, blank 0, a number as it is, an error as it is, "x" and "" #VALUE!). The
  text argument is left as it is. Left to IronCalc: a range (outside an array formula IronCalc
  intersects it as Excel does, while `--(C1:C3)` would not: measured), a name and a function
  call (IF, INDEX, VLOOKUP... may give a range). Array formulas are not rewritten (callers):
  one whose count or start is such a literal, cell, range, expression or an array constant
  holding text or a logical value is flagged (`array_count_reason`, unfixable.py), for IronCalc
  answers #VALUE! for each TRUE or "2" in it (measured: {=LEFT("ciao",A1:A3)}).
- PHI, F.DIST, F.DIST.RT, WEIBULL.DIST (and FDIST, WEIBULL), STANDARDIZE, LARGE's and SMALL's k
  and RANK's number given a logical value: IronCalc 0.9.1 answers #VALUE! (from a cell, typed
  or calculated, measured), Excel reads TRUE as 1 (`LOGICAL_NUMBERS`). The same rewrite as
  LEFT's count: a typed literal as the number, one cell or a comparison as `--(...)`.
- SLOPE, INTERCEPT, RSQ, PEARSON, CORREL, STEYX, COVAR, COVARIANCE.P/S and FORECAST given two
  ranges of different numbers of cells are #N/A, as their pages say (`PAIRED`); IronCalc 0.9.1
  answers #VALUE!. The call is written `#N/A` when both are plain ranges (known at load).
- MINA, MAXA, STDEVA, STDEVPA, VARA and VARPA given one cell (`MINA(A1,B1)`): "Arguments that
  contain TRUE evaluate as 1; arguments that contain text or FALSE evaluate as 0" (their pages),
  a blank cell is left out. IronCalc 0.9.1 reads a range so (MINA(A1:A4) with TRUE and "abc" in
  it is 0) but not one cell: MINA(A1,A2) with 5 and TRUE is 5 (Excel 1), MAXA of a text cell
  #VALUE! (Excel 0), STDEVA(5,TRUE,"abc" cells) #DIV/0! (Excel 2.6458), VARPA 0 (measured;
  Excel-saved formulas' test.xlsx STATISTICAL!U63:Y67, X99:Y119). The rewrite writes such a
  cell as the range of that one cell (`A1:A1`), which IronCalc reads as Excel reads the cell.
  MINA and MAXA of references holding no value are 0 ("If the arguments contain no values,
  MINA returns 0"; Excel-saved test.xlsx STATISTICAL!U63, U67), IronCalc #VALUE!: a call given
  only references becomes `IF(COUNTA(refs)=0,0,MINA(refs))`.
- OFFSET(reference, rows, cols, [height], [width]): "If omitted, height is the same height as
  reference" (width likewise). IronCalc 0.9.1 reads an empty height or width (`OFFSET(A1,1,0,)`,
  `OFFSET(A1:A5,0,0,,1)`) as 0 and answers #REF!. The rewrite writes the reference's own
  height or width there when the reference is a plain range (else leaves the call alone).
- The IS functions, TYPE, N and T read the value of a reference they are given ("value ... can
  be a blank (empty cell), error, logical value, text, number, or reference value", IS
  functions page; "If value is a reference, N returns the number/T the text in it"). IronCalc
  0.9.1 does not read the cell OFFSET gives from one cell (`ISTEXT(OFFSET(B1,1,0))` FALSE with
  text in B2, ISNUMBER FALSE, ISBLANK of an empty cell FALSE, TYPE 64, N #N/IMPL!, T "") nor
  the cell CHOOSE picks among cells (`ISTEXT(CHOOSE(2,A1,B2))` FALSE, N #N/IMPL!), while it
  reads the one INDEX gives (measured). Such an argument is read through `INDEX(arg,1,1)`,
  the same cell: an OFFSET of one cell whose height and width are left out or 1, a CHOOSE
  whose every choice is one cell (`READ_THROUGH_INDEX`). A CHOOSE among values is left alone
  (IronCalc reads those; INDEX of its value would not be).
- ISREF(value): "Value refers to a reference" (IS functions page); INDIRECT of a text that is no
  reference and OFFSET past the sheet's edge are #REF! ("If ref_text is not a valid cell
  reference, INDIRECT returns the #REF! error value"; OFFSET page), an error, not a reference:
  `ISREF(INDIRECT("'"&A1&"'!A1"))` is the usual test that a sheet named in A1 exists. IronCalc
  0.9.1 answers TRUE for ISREF of any INDIRECT or OFFSET call. ISREF whose whole argument is one
  of them is written `NOT(ISERROR(ROWS(arg)))`: ROWS of a reference is a number whatever its
  cells hold, and the error of one that is none.
- TIME's hour, minute and second are numbers "from 0 (zero) to 32767" (TIME page; ECMA-376's
  first edition, Part 4, TIME: "if hour, minute, or second are out of range, #NUM! is returned"), BASE's
  number "less than 2^53" (BASE page): a minute count of 40,000 is #NUM! in Excel. IronCalc
  0.9.1 wraps TIME's (TIME(0,40000,0) is 0.7778, 18:40) and writes BASE(2^53,36) out. An
  argument that is one cell or a number is read through `IF(ISNUMBER(c),IF(c-bound>=0,#NUM!,c),c)`,
  and a number at or above the bound written #NUM! (`BOUNDED`).
- CELL(info_type, reference): "If the reference argument is a range of cells, the CELL function
  returns the information for only the upper left cell of the range" (CELL page). IronCalc
  0.9.1 reads a range there as the cell in the formula's row or column, #VALUE! outside it
  (`CELL("address",A2:A4)` in row 1 #VALUE!, in row 3 $A$3). A range written out becomes its
  upper-left cell; an OFFSET or INDIRECT call, `OFFSET(call,0,0,1,1)`, the same cell.
"""

from __future__ import annotations

import re

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import (
    SINGLE_CELL,
    calls,
    function_name,
    is_single_cell,
    one_cell,
    plain_reference,
    pure,
    replace_call,
    rewrite_calls,
    tokenize,
    without_spaces,
    write_into_empty_argument,
)
from shared.calc.corrections.lookups import parse_range
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.refs import cell_name

MODES = frozenset({"MODE", "MODE.SNGL"})
# The functions that read the logical values and text of a referenced cell (1, 0), which IronCalc
# 0.9.1 reads so in a range but not in one cell
CELL_AS_RANGE = frozenset({"MINA", "MAXA", "STDEVA", "STDEVPA", "VARA", "VARPA"})
_DIGIT = re.compile(r"\d")
# The arguments (by position) that are numbers: LEFT/RIGHT's num_chars, MID's start and count.
COUNTS = {
    "LEFT": (1,), "RIGHT": (1,), "MID": (1, 2), "LEFTB": (1,), "RIGHTB": (1,), "MIDB": (1, 2),
}
# The number arguments (by position) of the functions IronCalc 0.9.1 answers #VALUE! for given a
# logical value, from a cell, typed or calculated (measured), where Excel reads TRUE as 1 and
# FALSE as 0 (Excel-saved: formulas' test.xlsx STATISTICAL!Y84 PHI(TRUE cell) 0.2420, Y57
# LARGE(...,TRUE cell) and Y95 SMALL the first, W96 STANDARDIZE with a TRUE standard deviation
# -1, Y89/Y90 RANK.AVG/RANK.EQ of TRUE #N/A as for 1). Not EDATE, EOMONTH, DEC2BIN, ISEVEN,
# ISODD, MROUND, GCD or LCM: Excel answers #VALUE! there too (the same file, rows of column Y).
LOGICAL_NUMBERS = {
    "PHI": (0,), "F.DIST": (0, 1, 2), "F.DIST.RT": (0, 1, 2), "FDIST": (0, 1, 2),
    "WEIBULL.DIST": (0, 1, 2), "WEIBULL": (0, 1, 2), "STANDARDIZE": (0, 1, 2), "LARGE": (1,),
    "SMALL": (1,), "RANK": (0, 2), "RANK.EQ": (0, 2), "RANK.AVG": (0, 2),
}
# Functions whose empty argument is the number 0 (`AVERAGE(10,20,30,)` is 15: "There is no
# argument after the last comma and excel is defining as "0" the value", Microsoft Q&A;
# SUM, MIN, MAX and PRODUCT in IronCalc 0.9.1 already read it so, these drop it: 20)
EMPTY_IS_ZERO = frozenset({
    "AVERAGE", "AVERAGEA", "MEDIAN", "COUNT", "COUNTA", "STDEV", "STDEV.S", "STDEV.P", "STDEVP", "STDEVA",
    "STDEVPA", "VAR", "VAR.S", "VAR.P", "VARP", "VARA", "VARPA", "DEVSQ", "AVEDEV", "MODE", "MODE.SNGL",
    "GEOMEAN", "HARMEAN", "KURT", "SKEW", "MAXA", "MINA",
})
# The paired data arguments (by position) of the functions whose pages say: "If known_y's and
# known_x's [array1 and array2] ... have a different number of data points, [the function]
# returns the #N/A error value" (SLOPE, INTERCEPT, RSQ, PEARSON, CORREL, STEYX, COVAR,
# COVARIANCE.P, COVARIANCE.S, FORECAST). IronCalc 0.9.1 answers #VALUE! (pycel's stats.xlsx
# Stats!P3:R5, formulas' test.xlsx STATISTICAL!S77, S91, W91, S101, W101: Excel #N/A).
PAIRED = {
    "SLOPE": (0, 1), "INTERCEPT": (0, 1), "RSQ": (0, 1), "PEARSON": (0, 1), "CORREL": (0, 1),
    "STEYX": (0, 1), "COVAR": (0, 1), "COVARIANCE.P": (0, 1), "COVARIANCE.S": (0, 1),
    "FORECAST": (1, 2), "FORECAST.LINEAR": (1, 2),
}
# An error in k (the position here) is the answer before any error among the data: Excel-saved
# formulas' test.xlsx COMPATIBILITY!Z29:AE29 and Z32:AE32, STATISTICAL!AA57:AF57, Z78:AE79 and
# Z87:AE88 (`PERCENTILE(K29:L29,L29)` with #VALUE! and #N/A in the data and #N/A as k is #N/A;
# IronCalc 0.9.1 answered the data's first error, #VALUE!).
K_ERROR_FIRST = {
    name: 1 for name in ("LARGE", "SMALL", "PERCENTILE", "PERCENTILE.INC", "PERCENTILE.EXC", "QUARTILE",
                         "QUARTILE.INC", "QUARTILE.EXC")
}
# IMSUM and IMPRODUCT take any number of complex numbers, ranges among them (Microsoft: IMSUM,
# IMPRODUCT functions: "inumber1, [inumber2], ... 1 to 255 complex numbers"); IronCalc 0.9.1
# takes two single values and answers #ERROR! otherwise (formulas' test.xlsx ENGINEERING!R44,
# R52: Excel 23.1+32j for IMSUM(C52:D52,E52)). Rewritten as nested calls of two, a range of up
# to _FOLD_CELLS cells written out cell by cell (a logical value in a cell #VALUE!, as in
# Excel); the identity completes a single number.
COMPLEX_FOLDS = {"IMSUM": '"0"', "IMPRODUCT": '"1"'}
# The complex-number arguments of the other IM functions: a logical value there is #VALUE! and
# a blank cell the number 0 in Excel (formulas' test.xlsx ENGINEERING!W33:Y53: IMCOS of a blank
# 1, IMABS of TRUE #VALUE!, IMSUB(G51,H51) with H51 blank G51 itself); IronCalc 0.9.1 answers
# #NUM! for both (and 0 for IMABS of a blank). A cell argument is read through
# `IF(ISLOGICAL(c),#VALUE!,IF(ISBLANK(c),"0",c))` (IMSUB's and IMDIV's second without the first test).
COMPLEX_ARGUMENTS = {
    **dict.fromkeys((
        "IMABS", "IMAGINARY", "IMARGUMENT", "IMCONJUGATE", "IMCOS", "IMCOSH", "IMCOT", "IMCSC", "IMCSCH",
        "IMEXP", "IMLN", "IMLOG10", "IMLOG2", "IMREAL", "IMSEC", "IMSECH", "IMSIN", "IMSINH", "IMSQRT",
        "IMTAN", "IMPOWER",
    ), (0,)),
    "IMSUB": (0, 1), "IMDIV": (0, 1),
}
# Functions without a value at complex 0, by the argument: Excel #NUM!, IronCalc 0.9.1 the text
# "-inf", "inf" or "NaNNaNi" (IMLN, IMCOT, IMCSC of a blank cell, formulas' test.xlsx
# ENGINEERING!W35:W42); a cell argument whose IMABS is exactly 0 is #NUM! (1/IMABS(c) an error).
COMPLEX_POLES = {"IMLN": 0, "IMLOG10": 0, "IMLOG2": 0, "IMCOT": 0, "IMCSC": 0, "IMCSCH": 0}
_FOLD_CELLS = 64
# FIXED and DOLLAR round the number as ROUND does (Microsoft: FIXED function, "Rounds a number
# to the specified number of decimals"; DOLLAR likewise), where IronCalc 0.9.1 formats the binary
# value: FIXED(1.005,2) is "1.00" there, "1.01" in Excel (ROUND(1.005,2) is 1.01 in both). The
# number is rounded first, `FIXED(IF(ISLOGICAL(x),x,ROUND(x,d)),d,...)`, when it and the decimals
# are constants and cells; decimals left out are 2.
ROUNDED_FIRST = frozenset({"FIXED", "DOLLAR"})
# IRR: "Microsoft Excel uses an iterative technique for calculating IRR. Starting with guess, IRR
# cycles through the calculation until the result is accurate within 0.00001 percent" (IRR
# page). IronCalc 0.9.1 stops its iteration farther from the rate where the guess is far from it:
# IRR({-20,5,5,5,5,5},17) is 0.07930826108, Excel 0.07930826116 (IronCalc's IRR.xlsx, saved by
# Excel; formulas' test.xlsx FINANCIAL!T26 likewise from a guess of 7). The call is answered
# again from its own answer, `IFERROR(IRR(values,IRR(values,guess)),IRR(values,guess))`: from
# there IronCalc's next step is within Excel's accuracy; its own answer stays where that
# second run fails.
# AND and OR read every argument: an error in any of them is the answer (the first, in order),
# whatever an earlier one decided (Microsoft: AND, OR functions; formulas' Excel-saved test.xlsx
# LOGICAL!AP21: OR(TRUE,"0",#REF!) is #REF!). IronCalc 0.9.1 stops at the first argument that
# decides (OR(TRUE,1/0) TRUE, AND(FALSE,NA()) FALSE). Rewritten as
# `IF(ISERROR(a),a,IF(ISERROR(b),b,OR(a,b)))`, a range's errors probed by SUM(range), when every
# argument is a range or an expression of constants, cells and functions without ranges.
LOGICAL_ERRORS = frozenset({"AND", "OR"})
# AVEDEV and DEVSQ given no number at all are #NUM! in Excel (formulas' Excel-saved test.xlsx
# STATISTICAL!AG3 AVEDEV(H3:J3) and AG28 DEVSQ(H28:J28) over a blank, a text and TRUE), where
# IronCalc 0.9.1 answers #DIV/0!. Where it does, the call is #NUM! when its arguments hold no
# number and no error: `IFERROR(call,IF(AND(ERROR.TYPE(call)=2,COUNT(args)=0,
# NOT(ISERROR(SUM(args)))),#NUM!,call))`, so a #DIV/0! among the data stays the answer.
NO_NUMBER_IS_NUM = frozenset({"AVEDEV", "DEVSQ"})
# MDETERM and MINVERSE of a range with an empty cell, a text or a logical value are #VALUE!
# (Microsoft: MDETERM, MINVERSE functions: "Any cells in array are empty or contain text";
# formulas' Excel-saved test.xlsx MATH & TRIG!V41 MDETERM(G41:H42) over -1 and blanks #VALUE!),
# where IronCalc 0.9.1 reads a blank as 0 and TRUE as 1 (MDETERM 0 there). A plain range is
# checked first: `IF(COUNT(r)=ROWS(r)*COLUMNS(r),call,IF(ISERROR(SUM(r)),SUM(r),#VALUE!))`, an
# error in it staying the answer.
NUMBERS_ONLY = frozenset({"MDETERM", "MINVERSE"})
# Analysis ToolPak functions that answer #VALUE! for a logical value in a cell (formulas'
# Excel-saved test.xlsx MATH & TRIG!Y31 FACTDOUBLE, Y34 GCD, Y37 LCM, Y70 SQRTPI of a TRUE cell),
# where IronCalc 0.9.1 reads it as 1 (FACTDOUBLE 1, SQRTPI 1.7725) or answers #NUM! (GCD, LCM):
# a one-cell argument (None: every one) is read through `IF(ISLOGICAL(c),#VALUE!,c)`.
LOGICAL_REFUSED = {"FACTDOUBLE": (0,), "SQRTPI": (0,), "GCD": None, "LCM": None}
# GCD and LCM answer an error among their arguments (a logical value in a cell read as #VALUE!,
# above) before a number outside their domain: GCD(-0.4, a TRUE cell) is #VALUE! (formulas'
# Excel-saved test.xlsx MATH & TRIG!Y34, AR34 over a row holding errors, LCM Y37), where IronCalc
# 0.9.1 answers #NUM! for the negative number it meets first. Arguments that are single values
# are probed for errors first, as AND's and OR's are (`_every_error_read`); a call given a range
# is left alone (where Excel meets a logical value or a text in it among the errors is not
# settled by those files).
ERRORS_FIRST = frozenset({"GCD", "LCM"})
# Arguments whose numbers at or above a bound are #NUM! in Excel (module docstring): the
# positions, and the bound as a number and as formula text (TIME's parts at most 32767 after
# truncation, BASE's number below 2^53: IronCalc reads a literal of 16 digits to 15 of them)
BOUNDED = {"TIME": ((0, 1, 2), 32768, "32768"), "BASE": ((0,), 2 ** 53, "2^53")}
_LOGICAL_TEXT_LIMIT = 4000
# The functions given one value that read a reference's cell (module docstring), and the calls
# whose one-cell reference IronCalc 0.9.1 leaves unread there
READ_THROUGH_INDEX = frozenset({
    "ISNUMBER", "ISTEXT", "ISNONTEXT", "ISLOGICAL", "ISBLANK", "ISERR", "ISERROR", "ISNA", "TYPE", "N", "T",
})
_UNREAD_REFERENCES = frozenset({"OFFSET", "CHOOSE"})
# their names as their calls are written (`F.DIST(`), for the scans of the sheet XML
_NUMBER_CALLS = tuple(sorted((*LOGICAL_NUMBERS, *PAIRED), key=len, reverse=True))
# the functions rewritten here that are found by their whole name (MENTION, _OTHER_CALLS)
_CALLED = "IM[A-Z0-9]+|AND|OR|FIXED|DOLLAR|MDETERM|MINVERSE|FACTDOUBLE|SQRTPI|GCD|LCM|CHOOSE|ISREF|CELL|TIME|BASE"
MENTION = re.compile(
    rb"(?i)(?:STDEV|VAR|DEVSQ|AVEDEV|SUMSQ|MODE|KURT|OFFSET|MINA|MAXA|PERCENTILE|QUARTILE)[A-Z.]*\("
    rb"|(?<![A-Z0-9_])(?:" + _CALLED.encode() + rb")\("
    rb"|(?:COUNT|AVERAGE)\([^<]*\{"
    rb"|(?:COUNTA?|AVERAGEA?|MEDIAN|GEOMEAN|HARMEAN|SKEW)\((?:\s*,|[^<]*,\s*[,)])"
    rb"|(?<![A-Z0-9_.])RATE\("
    rb"|(?<![A-Z0-9_.])IRR\("
    rb"|(?<![A-Z0-9_])(?:" + "|".join(re.escape(n) for n in _NUMBER_CALLS).encode() + rb")\("
    # LEFT/RIGHT/MID but those with a plain first argument and number literals after it
    rb"|(?<![A-Z.])(?:LEFT|RIGHT|MID)B?\("
    rb"(?![^(),\"<&]*(?:,\s*[+-]?(?:\d+\.?\d*|\.\d+)\s*){0,2}\))"
)
KEYWORDS = (
    b"STDEV", b"VAR", b"DEVSQ", b"AVEDEV", b"SUMSQ", b"MODE", b"KURT", b"OFFSET(", b"COUNT(", b"MINA(", b"MAXA(",
    b"PERCENTILE", b"QUARTILE", b"IMSUM(", b"IMPRODUCT(", b"IMSUB(", b"IMDIV(", b"IMPOWER(", b"IMABS(",
    b"IMAGINARY(", b"IMARGUMENT(", b"IMCONJUGATE(", b"IMCOS", b"IMCOT(", b"IMCSC", b"IMEXP(", b"IMLN(",
    b"IMLOG", b"IMREAL(", b"IMSEC", b"IMSIN", b"IMSQRT(", b"IMTAN(", b"AND(", b"OR(", b"FIXED(", b"DOLLAR(",
    b"AVERAGE(", b"LEFT(", b"RIGHT(", b"MID(", b"LEFTB(", b"RIGHTB(", b"MIDB(", b"MDETERM(", b"MINVERSE(",
    b"FACTDOUBLE(", b"SQRTPI(", b"GCD(", b"LCM(", b"MEDIAN(", b"GEOMEAN(", b"HARMEAN(", b"SKEW(", b"RATE(", b"IRR(",
    b"COUNTA(", b"AVERAGEA(", b"CHOOSE(", b"ISREF(", b"CELL(", b"TIME(", b"BASE(",
    *(name.encode() + b"(" for name in _NUMBER_CALLS),
)
STATISTIC_MENTION = re.compile(rb"(?i)(?:COUNT|AVERAGE)\(")
ARRAY_NAME = re.compile(rb"<(?:\w+:)?definedName\b[^>]*>\s*\{")
_ELEMENT = re.compile(
    r'\s*(?:(?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|"(?:[^"]|"")*"|TRUE|FALSE)\s*'
    r"(?:[,;]|$)",
    re.IGNORECASE,
)
DIRECT_VALUES = frozenset({
    "STDEV", "STDEV.S", "STDEV.P", "STDEVP", "STDEVA", "VAR", "VAR.S", "VAR.P", "VARP", "VARA",
    "DEVSQ", "AVEDEV", "SUMSQ", "MODE", "MODE.SNGL", "KURT", "STDEVPA", "VARPA",
})
_NUMBER = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")


def _literal(token: Token) -> str | None:
    """The number Excel reads from a literal typed as an argument, or None to leave it."""
    if token.type != Token.OPERAND:
        return None
    if token.subtype == Token.LOGICAL:
        return "1" if token.value.upper() == "TRUE" else "0"
    if token.subtype == Token.TEXT:
        text = token.value[1:-1].replace('""', '"')
        if _NUMBER.fullmatch(text):
            return text.strip()
        return "#VALUE!" if not _DIGIT.search(text) else None
    return None


_TYPED_TEXT_HINT = re.compile(
    r'(?i)(?:STDEV|VAR|DEVSQ|AVEDEV|SUMSQ|KURT)[A-Z.]*\s*\(.*"[^"]*\d[^"]*"'
)
TYPED_TEXT_REASON = (
    "{name} given typed text that may read as a number or date ({text}): Excel reads it by the "
    "locale, IronCalc 0.9.1 drops it"
)


def typed_text_reason(formula: str) -> str | None:
    """Why a formula's typed text argument of a statistical function cannot be read as Excel
    would (the module docstring), or None."""
    if not _TYPED_TEXT_HINT.search(formula):
        return None
    tokens = tokenize(formula)
    if tokens is None:
        return None
    for name, _, _, args in calls(tokens):
        if name not in DIRECT_VALUES or name in MODES:
            continue
        for arg in args:
            meaningful = without_spaces(tokens, arg)
            if len(meaningful) != 1:
                continue
            token = tokens[meaningful[0]]
            if token.type == Token.OPERAND and token.subtype == Token.TEXT:
                if _literal(token) is None:  # digits, not a plain number
                    return TYPED_TEXT_REASON.format(name=name, text=token.value)
    return None


ARRAY_COUNT_REASON = (
    "{name} in an array formula given a count or start that may be text or a logical value "
    "({text}): Excel reads TRUE as 1 and text that is a number as that number, IronCalc 0.9.1 "
    "answers #VALUE!, and array formulas are not rewritten"
)
_COUNT_CALL = re.compile(r"(?i)(?<![A-Z0-9_.])(?:LEFT|RIGHT|MID)B?\s*\(")


def array_count_reason(formula: str, array_formula: bool) -> str | None:
    """Why an array formula's LEFT/RIGHT/MID count or start may not be read as Excel reads it
    (the module docstring), or None."""
    if not array_formula or not _COUNT_CALL.search(formula):
        return None
    tokens = tokenize(formula)
    if tokens is None:
        return None
    for name, _, _, args in calls(tokens):
        for position in COUNTS.get(name, ()):
            meaningful = without_spaces(tokens, args[position]) \
                if position < len(args) else []
            if not meaningful:
                continue
            first = tokens[meaningful[0]]
            if len(meaningful) == 1:
                number = _literal(first)
                risky = number not in (None, "#VALUE!") or (
                    first.type == Token.OPERAND and first.subtype == Token.RANGE
                    and (SINGLE_CELL.fullmatch(first.value.lstrip("@")) is not None
                         or parse_range(first.value.lstrip("@")) is not None)
                )
            elif first.type == Token.ARRAY:
                risky = any(
                    tokens[i].type == Token.OPERAND
                    and tokens[i].subtype in (Token.TEXT, Token.LOGICAL) for i in meaningful
                )
            else:
                risky = one_cell(tokens, meaningful) \
                    or expression_kind(tokens, meaningful) is not None
            if risky:
                text = "".join(tokens[i].value for i in meaningful)
                return ARRAY_COUNT_REASON.format(name=name, text=text)
    return None


def array_numbers(text: str) -> list[float] | None:
    """The numbers of an array constant of literals (`{1,2;"a",TRUE}`, in parentheses or not);
    None for anything else, an array holding an error included."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    inner, numbers, position = text[1:-1], [], 0
    while position < len(inner):
        match = _ELEMENT.match(inner, position)
        if match is None or match.end() == position:
            return None
        if match.group("number") is not None:
            numbers.append(float(match.group("number")))
        position = match.end()
    return numbers if inner.strip() else None


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value).upper()


_COMPARISONS = frozenset({"=", "<>", "<", ">", "<=", ">="})
# Functions that, given single values, give one logical value or one text (their pages)
SCALAR_LOGICAL = frozenset({
    "AND", "OR", "XOR", "NOT", "ISNUMBER", "ISTEXT", "ISNONTEXT", "ISBLANK", "ISERROR", "ISERR",
    "ISNA", "ISLOGICAL", "ISEVEN", "ISODD", "EXACT",
})
SCALAR_TEXT = frozenset({
    "CONCATENATE", "CONCAT", "LEFT", "RIGHT", "MID", "UPPER", "LOWER", "TRIM", "FIXED",
    "DOLLAR", "SUBSTITUTE", "REPT",
})


def _function_name(value: str) -> str:
    return re.sub(r"^@?(?:_xlfn\.|_xlws\.)*", "", value[:-1], flags=re.IGNORECASE).upper()
_SCALAR_OPERANDS = frozenset({Token.NUMBER, Token.TEXT, Token.LOGICAL})


def expression_kind(tokens: list[Token], positions: list[int]) -> str | None:
    """"logical" or "text" for an argument that is an expression of literals and single cells
    whose result is a comparison's TRUE/FALSE or a concatenation's text (`1=1`, `A1>0`,
    `A1&""`), or a call of a function of single values giving one (`AND(A1>0,B1)`,
    `ISNUMBER(A1)`, `LEFT(A1,2)`, with literals and single cells only); None for anything else:
    a reference, a name (it may be several cells), a range, another function (IF, INDEX, ...
    may give a reference) or an array (their logical values and text Excel ignores)."""
    meaningful = without_spaces(tokens, positions)
    if len(meaningful) < 2:
        return None
    depth, found, calls, first_call = 0, [], 0, None  # (depth, operator) outside calls
    for i in meaningful:
        token = tokens[i]
        if token.type == Token.FUNC:
            if token.subtype == Token.OPEN:
                name = _function_name(token.value)
                if name not in SCALAR_LOGICAL and name not in SCALAR_TEXT:
                    return None
                first_call = first_call or name
                calls += 1
            else:
                calls -= 1
        elif token.type == Token.SEP:
            if calls == 0:
                return None
        elif token.type == Token.PAREN:
            depth += 1 if token.subtype == Token.OPEN else -1
        elif token.type == Token.OPERAND:
            if token.subtype == Token.RANGE:
                if not SINGLE_CELL.fullmatch(token.value.lstrip("@")):
                    return None
            elif token.subtype not in _SCALAR_OPERANDS:
                return None
        elif token.type == Token.OP_IN:
            if token.value in (":", ",", " "):
                return None
            if calls == 0:
                found.append((depth, token.value))
        elif token.type not in (Token.OP_PRE, Token.OP_POST):
            return None
    if not found:  # one call of a function of single values, or nothing to convert
        if first_call is None:
            return None
        return "logical" if first_call in SCALAR_LOGICAL else "text"
    top = min(d for d, _ in found)
    operators = {op for d, op in found if d == top}
    if operators & _COMPARISONS:
        return "logical"  # comparisons bind last: the result is TRUE or FALSE
    return "text" if "&" in operators else None


def _constant_arrays(values, name, opened, closed, args) -> bool:
    """COUNT/AVERAGE with array constants rewritten (module docstring)."""
    texts = ["".join(values[i] for i in arg) for arg in args]
    arrays = [array_numbers(text) for text in texts]
    if not any(numbers is not None for numbers in arrays):
        return False
    found = [n for numbers in arrays if numbers is not None for n in numbers]
    others = ",".join(t for t, numbers in zip(texts, arrays) if numbers is None)
    count, total = _number_text(float(len(found))), _number_text(float(sum(found)))
    if name == "COUNT":
        text = f"(COUNT({others})+{count})" if others else count
    else:
        text = (
            f"((SUM({others})+{total})/(COUNT({others})+{count}))" if others
            else f"({total}/{count})"
        )
    replace_call(values, opened, closed, text)
    return True


def _size(tokens: list[Token], positions: list[int]) -> tuple[int, int] | None:
    """(height, width) of a plain reference argument."""
    meaningful = without_spaces(tokens, positions)
    if len(meaningful) != 1 or tokens[meaningful[0]].type != Token.OPERAND:
        return None
    text = tokens[meaningful[0]].value.lstrip("@")
    if SINGLE_CELL.fullmatch(text):
        return 1, 1
    box = parse_range(text)
    return None if box is None else (box.rows, box.cols)


def _separators(tokens: list[Token], opened: int, closed: int) -> list[int]:
    """The positions of a call's own argument separators."""
    found, depth = [], 0
    for i in range(opened + 1, closed):
        token = tokens[i]
        if token.subtype == Token.OPEN:
            depth += 1
        elif token.subtype == Token.CLOSE:
            depth -= 1
        elif depth == 0 and token.type == Token.SEP and token.subtype == Token.ARG:
            found.append(i)
    return found


# A LEFT/RIGHT/MID call with a plain first argument and number literals after it (nothing to
# rewrite), and the other functions rewritten here: a formula with neither of the others and
# only such calls is not tokenized (most LEFT/RIGHT/MID formulas; tokenizing costs ~0.1 ms).
_PLAIN_COUNTS = re.compile(
    r'(?i)(?<![A-Z0-9_.])(?:LEFT|RIGHT|MID)B?\((?:[^(),"]|"(?:[^"]|"")*")*'
    r"(?:,\s*[+-]?(?:\d+\.?\d*|\.\d+)\s*){0,2}\)"
)
_OTHER_CALLS = re.compile(
    r"(?i)STDEV|VAR|DEVSQ|AVEDEV|SUMSQ|MODE|KURT|OFFSET|COUNT|AVERAGE|MINA|MAXA|PERCENTILE|QUARTILE|"
    r"MEDIAN|GEOMEAN|HARMEAN|SKEW|RATE\(|(?<![A-Za-z0-9_.])IRR\(|"
    r"(?<![A-Za-z0-9_.])(?:" + _CALLED + r")\(|"
    + "|".join(re.escape(n) for n in _NUMBER_CALLS)
)


def rewrite_formula(formula: str) -> str | None:
    """The formula with Excel's reading of those arguments, or None when nothing changes."""
    if not _OTHER_CALLS.search(formula) and not _COUNT_CALL.search(_PLAIN_COUNTS.sub("", formula)):
        return None
    return rewrite_calls(formula, _rewrite_call)


def _rewrite_call(tokens, values, name, opened, closed, args) -> bool:
    changed = False
    if name in EMPTY_IS_ZERO and len(args) > 1:
        for position, arg in enumerate(args):
            if not without_spaces(tokens, arg):
                write_into_empty_argument(tokens, values, opened, args, position, "0")
                changed = True
    if name == "RATE" and len(args) == 6:
        # RATE's guess only starts Excel's iteration; IronCalc 0.9.1 answers #ERROR! for any
        # RATE given one and starts from Excel's default, 0.1 (RATE page)
        texts = ["".join(values[i] for i in arg) for arg in args[:5]]
        replace_call(values, opened, closed, values[opened] + ",".join(texts) + ")")
        return True
    if name == "IRR" and 1 <= len(args) <= 2 and without_spaces(tokens, args[0]):
        # IRR answered again from its own answer (IRR's accuracy, beside ROUNDED_FIRST)
        call = "".join(values[opened:closed + 1])
        data = "".join(values[i] for i in args[0]).strip()
        replace_call(values, opened, closed, f"IFERROR({values[opened]}{data},{call}),{call})")
        return True
    changed |= _arguments(tokens, values, name, opened, closed, args)
    if name in NO_NUMBER_IS_NUM and args and all(without_spaces(tokens, arg) for arg in args):
        # no number at all is #NUM! (NO_NUMBER_IS_NUM), the arguments as rewritten above
        call = "".join(values[opened:closed + 1])
        texts = ",".join("".join(values[i] for i in arg).strip() for arg in args)
        replace_call(values, opened, closed, f"IFERROR({call},IF(AND(ERROR.TYPE({call})=2,COUNT({texts})=0,"
                                             f"NOT(ISERROR(SUM({texts})))),#NUM!,{call}))")
        return True
    k = K_ERROR_FIRST.get(name)
    if k is not None and len(args) == 2 and one_cell(tokens, without_spaces(tokens, args[k])):
        # k's error first (K_ERROR_FIRST); k as rewritten above (`--(B1)` for LARGE and SMALL)
        given = "".join(values[i] for i in args[k]).strip()
        call = "".join(values[opened:closed + 1])
        replace_call(values, opened, closed, f"IF(ISERROR({given}),{given},{call})")
        changed = True
    return changed


def _arguments(tokens, values, name, opened, closed, args) -> bool:
    changed = False
    if name in CELL_AS_RANGE:
        for arg in args:
            meaningful = without_spaces(tokens, arg)
            if len(meaningful) == 1 and is_single_cell(tokens[meaningful[0]]) \
                    and not tokens[meaningful[0]].value.startswith("@"):
                value = values[meaningful[0]]
                values[meaningful[0]] = f"{value}:{value.rpartition('!')[2]}"
                changed = True
        if name in ("MINA", "MAXA") and args and all(_reference(tokens, arg) for arg in args):
            # "If the arguments contain no values, MINA returns 0" (IronCalc: #VALUE!)
            texts = ",".join("".join(values[i] for i in arg) for arg in args)
            replace_call(values, opened, closed, f"IF(COUNTA({texts})=0,0,{name}({texts}))")
            changed = True
    if name in DIRECT_VALUES:
        for arg in args:
            meaningful = without_spaces(tokens, arg)
            if len(meaningful) == 1:
                number = _literal(tokens[meaningful[0]])
                if number == "#VALUE!" and name in MODES:
                    continue
                if number is not None:
                    values[meaningful[0]] = number
                    changed = True
                continue
            kind = expression_kind(tokens, arg) if name not in MODES else None
            if kind is not None:
                # the value Excel reads: TRUE 1, "3" 3, other text #VALUE! (as typed)
                values[meaningful[0]] = "--(" + values[meaningful[0]]
                values[meaningful[-1]] += ")"
                changed = True
    elif name in COUNTS or name in LOGICAL_NUMBERS:
        for position in COUNTS.get(name) or LOGICAL_NUMBERS[name]:
            meaningful = without_spaces(tokens, args[position]) \
                if position < len(args) else []
            if len(meaningful) == 1:
                number = _literal(tokens[meaningful[0]])
                if number is not None and number != "#VALUE!":
                    values[meaningful[0]] = number
                    changed = True
                    continue
            if meaningful and (
                one_cell(tokens, meaningful) or expression_kind(tokens, meaningful)
            ):
                # the number Excel reads from the cell's or the expression's value
                values[meaningful[0]] = "--(" + values[meaningful[0]]
                values[meaningful[-1]] += ")"
                changed = True
    elif name in PAIRED and len(args) > max(PAIRED[name]):
        sizes = [_size(tokens, args[i]) for i in PAIRED[name]]
        if None not in sizes and sizes[0][0] * sizes[0][1] != sizes[1][0] * sizes[1][1]:
            replace_call(values, opened, closed, "#N/A")
            changed = True
    elif name in ("COUNT", "AVERAGE") and args:
        changed = _constant_arrays(values, name, opened, closed, args)
    elif name in ROUNDED_FIRST and 1 <= len(args) <= 3:
        changed = _rounded_first(tokens, values, args)
    elif name in LOGICAL_ERRORS and args:
        changed = _every_error_read(tokens, values, name, opened, closed, args)
    elif name in COMPLEX_FOLDS and args:
        changed = _complex_fold(tokens, values, name, opened, closed, args)
    elif name in COMPLEX_ARGUMENTS:
        guarded = None
        for position in COMPLEX_ARGUMENTS[name]:
            # a logical value in IMSUB's or IMDIV's second argument is left to IronCalc: Excel
            # reads the first argument whole before it (IMDIV("yvj",TRUE) is #NUM!)
            read = _cell_read_through(tokens, values, args, position,
                                      _complex_cell if position == 0 else _blank_as_zero)
            if read is not None:
                if COMPLEX_POLES.get(name) == position:
                    guarded = read
                changed = True
        if guarded is not None:
            call = "".join(values[opened:closed + 1])
            # not IMABS(c)=0: IronCalc compares with a tolerance (1E-16=0 is TRUE there), and
            # IMLN of 1E-16 is a number (IronCalc's COMPLEXs.xlsx, saved by Excel)
            replace_call(values, opened, closed,  # complex_text.POLE_GUARD
                         f"IF(ISERROR(1/IMABS({guarded})),IF(ISERROR(IMABS({guarded})),{call},#NUM!),{call})")
    elif name in NUMBERS_ONLY and len(args) == 1:
        kept = without_spaces(tokens, args[0])
        if len(kept) == 1 and tokens[kept[0]].subtype == Token.RANGE \
                and parse_range(tokens[kept[0]].value.lstrip("@")) is not None:
            r = values[kept[0]]
            call = "".join(values[opened:closed + 1])
            replace_call(values, opened, closed,
                         f"IF(COUNT({r})=ROWS({r})*COLUMNS({r}),{call},IF(ISERROR(SUM({r})),SUM({r}),#VALUE!))")
            changed = True
    elif name in BOUNDED and len(args) >= len(BOUNDED[name][0]):
        positions, bound, written = BOUNDED[name]
        for position in positions:
            changed |= _bounded(tokens, values, args, position, bound, written)
    elif name in LOGICAL_REFUSED:
        for position in LOGICAL_REFUSED[name] or range(len(args)):
            changed |= _cell_read_through(tokens, values, args, position, _not_logical) is not None
        if name in ERRORS_FIRST and args and not any(_ranged(tokens, arg) for arg in args):
            changed |= _every_error_read(tokens, values, name, opened, closed, args)
    elif name in READ_THROUGH_INDEX and len(args) == 1:
        changed = _read_through_index(tokens, values, args[0])
    elif name == "ISREF" and len(args) == 1:
        changed = _reference_or_error(tokens, values, opened, closed, args[0])
    elif name == "CELL" and len(args) == 2:
        changed = _upper_left(tokens, values, args[1])
    elif name == "OFFSET" and len(args) >= 4:
        size = _size(tokens, args[0])
        if size is None:
            return False
        separators = _separators(tokens, opened, closed)
        for position, fill in ((3, size[0]), (4, size[1])):
            if position < len(args) and not without_spaces(tokens, args[position]):
                values[separators[position - 1]] += str(fill)  # the comma before it
                changed = True
    return changed


def _read_through_index(tokens, values, arg) -> bool:
    """An OFFSET of one cell or a CHOOSE among cells, the whole argument of an IS function,
    TYPE, N or T, read through INDEX(arg,1,1) (READ_THROUGH_INDEX)."""
    inner = _whole_call(tokens, arg, _UNREAD_REFERENCES)
    if inner is None:
        return False
    name, opened, closed, inner_args = inner
    if name == "OFFSET":
        if not 3 <= len(inner_args) <= 5 or not _one_cell_reference(tokens, inner_args[0]):
            return False
        for size in inner_args[3:]:
            given = without_spaces(tokens, size)
            if given and (len(given) != 1 or tokens[given[0]].value.strip() != "1"):
                return False
    elif len(inner_args) < 2 or not all(_one_cell_reference(tokens, choice) for choice in inner_args[1:]):
        return False
    # without the `@` IronCalc may render before the call (`T(@CHOOSE(...))`): INDEX reads the
    # reference itself, its intersection with the formula's cell would be #VALUE!
    values[opened] = "INDEX(" + values[opened].lstrip("@")
    values[closed] += ",1,1)"
    return True


_REFERENCE_CALLS = frozenset({"INDIRECT", "OFFSET"})


def _whole_call(tokens, arg, names: frozenset) -> tuple | None:
    """The call (name, open token, close token, arguments: formula_tokens.calls) that is the
    whole argument `arg`, when it calls one of `names`; None otherwise (`OFFSET(...)+1`)."""
    kept = without_spaces(tokens, arg)
    if not kept or tokens[kept[0]].type != Token.FUNC or function_name(tokens[kept[0]]) not in names:
        return None
    return next((c for c in calls(tokens) if c[1] == kept[0] and c[2] == kept[-1]), None)


def _reference_or_error(tokens, values, opened, closed, arg) -> bool:
    """ISREF of an INDIRECT or OFFSET call as whether that call is a reference (module
    docstring)."""
    inner = _whole_call(tokens, arg, _REFERENCE_CALLS)
    if inner is None:
        return False
    call = "".join(values[inner[1]:inner[2] + 1]).lstrip("@")
    replace_call(values, opened, closed, f"NOT(ISERROR(ROWS({call})))")
    return True


def _upper_left(tokens, values, arg) -> bool:
    """CELL's reference as the upper-left cell of a range (module docstring)."""
    found = plain_reference(tokens, arg)
    if found is not None:
        at, match = found
        if match is None or match["c2"] is None:
            return False  # a name, or one cell already
        values[at] = (match["sheet"] or "") + match["c1"] + match["r1"]
        return True
    inner = _whole_call(tokens, arg, _REFERENCE_CALLS)
    if inner is None:
        return False
    values[inner[1]] = "OFFSET(" + values[inner[1]].lstrip("@")
    values[inner[2]] += ",0,0,1,1)"
    return True


def _one_cell_reference(tokens: list[Token], positions: list[int]) -> bool:
    found = plain_reference(tokens, positions)
    return found is not None and found[1] is not None and found[1]["c2"] is None


def _rounded_first(tokens, values, args) -> bool:
    """FIXED/DOLLAR with their number rounded by ROUND first (ROUNDED_FIRST)."""
    literals = frozenset({Token.NUMBER, Token.TEXT})
    number = without_spaces(tokens, args[0])
    places = without_spaces(tokens, args[1]) if len(args) > 1 else []
    if not number or not pure(tokens, args[0], literals) or (places and not pure(tokens, args[1], literals)):
        return False
    if len(args) > 1 and not places:
        return False  # decimals left empty (FIXED(A1,,TRUE)): not the default 2; left to IronCalc
    x = "(" + "".join(values[i] for i in args[0]).strip() + ")"
    d = "".join(values[i] for i in args[1]).strip() if places else "2"
    for i in number:
        values[i] = ""
    values[number[0]] = f"IF(ISLOGICAL({x}),{x},ROUND({x},{d}))"
    return True


def _ranged(tokens, arg) -> bool:
    """Whether an argument mentions a range of several cells or a name."""
    return any(tokens[i].type == Token.OPERAND and tokens[i].subtype == Token.RANGE and not is_single_cell(tokens[i])
               for i in arg)


def _every_error_read(tokens, values, name, opened, closed, args) -> bool:
    """AND/OR answering the first error among all their arguments (LOGICAL_ERRORS), GCD/LCM
    before a number outside their domain (ERRORS_FIRST)."""
    probes = []
    for arg in args:
        kept = without_spaces(tokens, arg)
        if not kept:
            return False
        text = "".join(values[i] for i in arg).strip()
        operands = [tokens[i] for i in kept if tokens[i].type == Token.OPERAND]
        if len(kept) == 1 and operands and operands[0].subtype == Token.RANGE and not is_single_cell(operands[0]):
            if parse_range(operands[0].value.lstrip("@")) is None:
                return False  # a name: maybe a range, maybe a formula
            probes.append(f"SUM({text})")
        elif len(kept) == 1 and operands and operands[0].subtype in (Token.NUMBER, Token.TEXT, Token.LOGICAL):
            probes.append(None)  # a constant is no error
        elif all(t.subtype != Token.RANGE or is_single_cell(t) for t in operands) \
                and not any(tokens[i].type == Token.ARRAY for i in kept) and "{" not in text:
            probes.append(text)
        else:
            return False
    if len(probes) == 1 and (probes[0] is None or not probes[0].startswith("SUM(")):
        return False  # one value: nothing to stop early at
    if not any(probes):
        return False
    call = "".join(values[opened:closed + 1])
    for probe in reversed(probes):
        if probe is not None:
            call = f"IF(ISERROR({probe}),{probe},{call})"
    if len(call) > _LOGICAL_TEXT_LIMIT:
        return False  # AND/OR nested deep: each level doubles the text; left to IronCalc
    replace_call(values, opened, closed, call)
    return True


def _complex_fold(tokens, values, name, opened, closed, args) -> bool:
    """IMSUM/IMPRODUCT of several numbers or ranges as nested calls of two (COMPLEX_FOLDS); a
    call of two single values is IronCalc's already, one with a name or a computed range is
    left alone."""
    items, ranged = [], False
    for arg in args:
        kept = without_spaces(tokens, arg)
        if len(kept) == 1 and tokens[kept[0]].type == Token.OPERAND and tokens[kept[0]].subtype == Token.RANGE \
                and not is_single_cell(tokens[kept[0]]):
            box = parse_range(tokens[kept[0]].value.lstrip("@"))
            if box is None or box.rows * box.cols > _FOLD_CELLS:
                return False
            items += [_not_logical(box.prefix() + cell_name(r, c)) for r in range(box.top, box.bottom + 1)
                      for c in range(box.left, box.right + 1)]
            ranged = True
        elif pure(tokens, arg, literals=frozenset({Token.NUMBER, Token.TEXT})):
            text = "".join(values[i] for i in arg).strip()
            items.append(_not_logical(text) if one_cell(tokens, kept) else text)
        else:
            return False
    if len(items) == 2 and not ranged:
        return False
    folded = f"{name}({items[0]},{COMPLEX_FOLDS[name]})" if len(items) == 1 else items[0]
    for item in items[1:]:
        folded = f"{name}({folded},{item})"
    replace_call(values, opened, closed, folded)
    return True


def _cell_read_through(tokens, values, args, position: int, read) -> str | None:
    """The argument at `position`, when it is one cell, written as `read(cell)` (the text
    written, or None: no such argument, or not one cell)."""
    kept = without_spaces(tokens, args[position]) if position < len(args) else []
    if not kept or not one_cell(tokens, kept):
        return None
    cell = "".join(values[i] for i in kept).strip()
    for i in kept:
        values[i] = ""
    values[kept[0]] = read(cell)
    return values[kept[0]]


def _bounded(tokens, values, args, position: int, bound: int, written: str) -> bool:
    """An argument whose numbers at or above `bound` are #NUM! (BOUNDED): one cell read through
    a test of its number (a difference: IronCalc compares numbers within a tolerance, so
    2^53-1>=2^53 is TRUE there), a number literal at or above the bound written #NUM!."""
    kept = without_spaces(tokens, args[position])
    if len(kept) == 1 and tokens[kept[0]].type == Token.OPERAND and tokens[kept[0]].subtype == Token.NUMBER:
        if float(tokens[kept[0]].value) < bound:
            return False
        values[kept[0]] = "#NUM!"
        return True
    return _cell_read_through(
        tokens, values, args, position, lambda cell: f"IF(ISNUMBER({cell}),IF({cell}-{written}>=0,#NUM!,{cell}),{cell})"
    ) is not None


def _blank_as_zero(cell: str) -> str:
    """A cell given to an IM function: a blank is the complex number 0 (COMPLEX_ARGUMENTS)."""
    return f'IF(ISBLANK({cell}),"0",{cell})'


def _complex_cell(cell: str) -> str:
    """An IM function's first cell: a logical value #VALUE!, a blank 0 (COMPLEX_ARGUMENTS)."""
    return _not_logical(_blank_as_zero(cell))


def _not_logical(cell: str) -> str:
    """A cell given to an IM function or a LOGICAL_REFUSED one: a logical value there is #VALUE!
    in Excel (formulas' test.xlsx ENGINEERING!Y29:Y53, MATH & TRIG column Y), a number or #NUM!
    in IronCalc."""
    return f"IF(ISLOGICAL({cell}),#VALUE!,{cell})"


def _reference(tokens: list[Token], positions: list[int]) -> bool:
    """Whether an argument is one reference (a cell, a range or a name), nothing else."""
    kept = without_spaces(tokens, positions)
    return len(kept) == 1 and tokens[kept[0]].type == Token.OPERAND and tokens[kept[0]].subtype == Token.RANGE


def correct_array_logicals(model, cells: list[tuple[int, int, int]]) -> list[Rewrite]:
    """AND and OR answering the first error among their arguments (LOGICAL_ERRORS) in the
    one-cell array formulas `cells` (`{=AND(FALSE,C3:Q3)}` is the range's first error, IronCalc
    0.9.1 FALSE: formulas' Excel-saved test.xlsx LOGICAL!AH3, AJ3, AH21, AJ21): the rewrite
    probes a range with SUM and leaves an argument computed from a range alone, so it reads
    the same in an array formula. The module's other rewrites are not made there."""

    def logicals(tokens, values, name, opened, closed, args) -> bool:
        return name in LOGICAL_ERRORS and bool(args) and _every_error_read(tokens, values, name, opened, closed, args)

    return rewrite_cells(model, cells, lambda formula, *_: rewrite_calls(formula, logicals))


def correct_arguments(model, cells: list[tuple[int, int, int]]) -> list[Rewrite]:
    """Rewrite, in `model`, those arguments in the formulas of `cells` (sheet index, row, col;
    array formulas left out by the caller). Returns what changed."""
    return rewrite_cells(model, cells, lambda formula, *_: rewrite_formula(formula))
