"""GET /functions: the function support table for the console, behind an administrator's session."""

from shared.calc.fidelity import support


def test_an_administrator_reads_the_support_table(admin):
    # WHEN an administrator asks for the function support table
    answer = admin.get("/functions")
    # THEN it is the committed table: every function with its engines, layer role and status
    assert answer.status_code == 200
    body = answer.json()
    assert body["engines"] == support.load()["engines"]
    rows = {row["function"]: row for row in body["functions"]}
    assert len(rows) == len(support.load()["functions"])
    # TEXT is IronCalc's but the layer evaluates it (Excel's number formats); GETPIVOTDATA is
    # answered from the saved pivot tables; WEBSERVICE (a call to another host) is never calculated
    assert rows["TEXT"]["layer"] == "evaluated" and rows["TEXT"]["status"] == "supported with corrections"
    assert rows["GETPIVOTDATA"]["layer"] == "rewritten"
    assert rows["WEBSERVICE"]["status"] == "not supported"
    assert {row["status"] for row in body["functions"]} <= {"supported", "supported with corrections", "not supported"}


def test_it_needs_a_session(client):
    assert client.get("/functions").status_code == 401


def test_it_is_in_the_openapi_document(client):
    spec = client.get("/openapi.json").json()
    assert "FunctionSupportResponse" in spec["paths"]["/functions"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
