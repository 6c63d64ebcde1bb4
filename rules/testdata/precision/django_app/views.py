"""Django views written the safe way (Quavon precision corpus)."""
import hmac
import json
import os

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import FileResponse, Http404, HttpResponse, HttpResponseForbidden, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils.html import escape, format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from .models import Article, Comment

SORT = {"new": "-created", "title": "title"}
MEDIA = os.path.realpath(settings.MEDIA_ROOT)


def article_list(request):
    order = SORT.get(request.GET.get("sort"), "-created")
    articles = Article.objects.filter(published=True).order_by(order)
    return render(request, "blog/list.html", {"articles": articles})


def search(request):
    q = request.GET.get("q", "")
    results = Article.objects.filter(title__icontains=q)[:50]
    return render(request, "blog/search.html", {"q": q, "results": results})


def article_detail(request, slug):
    article = get_object_or_404(Article, slug=slug)
    return render(request, "blog/detail.html", {"article": article})


def greet(request):
    name = request.GET.get("name", "")
    return HttpResponse(format_html("<p>Hello {}</p>", name))


def plain(request):
    return HttpResponse(request.GET.get("msg", ""), content_type="text/plain")


def api_articles(request):
    data = list(Article.objects.values("id", "title"))
    return JsonResponse({"articles": data, "q": request.GET.get("q")})


def tag_cloud(tags):
    return format_html_join("\n", '<a href="/tags/{}/">{}</a>', ((t.slug, t.name) for t in tags))


def badge(kind):
    return mark_safe('<span class="badge">new</span>') if kind == "new" else ""


def widget(context):
    return mark_safe(render_to_string("blog/widget.html", context))


def raw_report(request, year):
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM blog_article WHERE extract(year FROM created) = %s", [year])
        (count,) = cur.fetchone()
    return JsonResponse({"year": year, "count": count})


def people(request):
    last = request.GET.get("last", "")
    return render(request, "people.html", {"people": Person.objects.raw("SELECT * FROM app_person WHERE last_name = %s", [last])})


def media(request, name):
    path = os.path.realpath(os.path.join(MEDIA, name))
    if not path.startswith(MEDIA + os.sep):
        raise Http404()
    return FileResponse(open(path, "rb"))


@login_required
@require_POST
def comment(request, slug):
    article = get_object_or_404(Article, slug=slug)
    Comment.objects.create(article=article, author=request.user, body=request.POST["body"])
    return redirect("article-detail", slug=slug)


def login_done(request):
    nxt = request.GET.get("next", "/")
    if not url_has_allowed_host_and_scheme(nxt, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        nxt = "/"
    return redirect(nxt)


@csrf_exempt
@require_POST
def github_hook(request):
    sig = "sha256=" + hmac.new(settings.HOOK_SECRET.encode(), request.body, "sha256").hexdigest()
    if not hmac.compare_digest(sig, request.headers.get("X-Hub-Signature-256", "")):
        return HttpResponseForbidden()
    payload = json.loads(request.body)
    handle_push(payload)
    return HttpResponse("ok")


class ProfileUpdate(View):
    def post(self, request):
        request.user.email = request.POST["email"]
        request.user.save()
        response = redirect("profile")
        response.set_cookie("session_hint", "1", secure=True, httponly=True, samesite="Lax")
        return response
