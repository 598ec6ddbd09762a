#pragma once
// The window: a sidebar (Chats, Models, Cluster, Settings) switching a stack of pages. Window
// geometry and state are remembered between runs (QSettings).
#include <QListWidget>
#include <QMainWindow>
#include <QStackedWidget>

#include <memory>

#include "tandem/store/chat_store.h"

namespace tandem::ui {

class ChatPage;

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    enum Page { Chats = 0, Models, Cluster, Settings };

    explicit MainWindow(std::shared_ptr<store::ChatStore> store, QWidget* parent = nullptr);

    ChatPage* chatPage() { return chat_; }
    void showPage(Page page);
    Page currentPage() const { return static_cast<Page>(stack_->currentIndex()); }

  protected:
    void closeEvent(QCloseEvent* event) override;

  private:
    QListWidget* sidebar_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    ChatPage* chat_ = nullptr;
};

}  // namespace tandem::ui
