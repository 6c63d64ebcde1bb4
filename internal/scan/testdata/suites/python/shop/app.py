import os

from flask import Flask, jsonify, request

from .service import git_revision, load_orders, thumbnail, total

app = Flask(__name__)
app.config["SECRET_KEY"] = os.environ["SHOP_SECRET_KEY"]


@app.get("/version")
def version():
    return jsonify(revision=git_revision())


@app.get("/orders/<int:order_id>/total")
def order_total(order_id):
    orders = load_orders(os.environ.get("SHOP_ORDERS", "orders.json"))
    for order in orders:
        if order["id"] == order_id:
            return jsonify(total=total(order))
    return jsonify(error="not found"), 404


@app.post("/thumbnails")
def make_thumbnail():
    thumbnail(request.form["name"])
    return "", 204


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=int(os.environ.get("PORT", "8000")))
